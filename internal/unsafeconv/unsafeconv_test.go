package unsafeconv

import (
	"testing"
	"unsafe"
)

func TestString(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"bytes", []byte("pay_1\x00\xff")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := String(tc.b)
			if s != string(tc.b) {
				t.Fatalf("String(%q) = %q", tc.b, s)
			}
			if len(tc.b) > 0 && unsafe.StringData(s) != &tc.b[0] {
				t.Error("String copied the bytes")
			}
		})
	}
}

func TestTypeID(t *testing.T) {
	t.Parallel()
	type keyA struct{}
	type keyB struct{}
	for _, tc := range []struct {
		name string
		a, b any
		same bool
	}{
		{"one type", keyA{}, keyA{}, true},
		{"one type, other values", 1, 2, true},
		{"two empty structs", keyA{}, keyB{}, false},
		{"int and int64", 1, int64(1), false},
		{"a type and its pointer", keyA{}, &keyA{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := TypeID(tc.a) == TypeID(tc.b); got != tc.same {
				t.Errorf("TypeID(%T) == TypeID(%T) is %v, want %v", tc.a, tc.b, got, tc.same)
			}
			if TypeID(tc.a) == 0 {
				t.Errorf("TypeID(%T) is 0", tc.a)
			}
		})
	}
	if TypeID(nil) != 0 {
		t.Error("TypeID(nil) is not 0")
	}
}
