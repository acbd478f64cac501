// Package unsafeconv holds paygraph's only uses of package unsafe: views
// of memory paygraph owns, without a copy, each behind a function that
// says what its caller must keep true. Nothing here reads another
// module's unexported fields.
package unsafeconv

import "unsafe"

// String is b's bytes as a string, without a copy. The caller must never
// change b's bytes afterwards: the string would change with them.
func String(b []byte) string {
	return unsafe.String(unsafe.SliceData(b), len(b))
}

// TypeID is an identity of v's dynamic type: the address of its type
// descriptor (the first word of an interface value), equal for values of
// one type and distinct for values of different types in one process; 0
// for a nil v. It is not stable between processes.
func TypeID(v any) uintptr {
	return uintptr((*[2]unsafe.Pointer)(unsafe.Pointer(&v))[0])
}

// Addr is p's address, for identity only: a key that must not keep p
// alive (the holder keeps p alive some other way, or holds it weakly).
func Addr[T any](p *T) uintptr {
	return uintptr(unsafe.Pointer(p))
}
