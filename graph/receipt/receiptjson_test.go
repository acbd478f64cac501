package receipt

import (
	"encoding/json"
	"reflect"
	"testing"
)

// receiptFields is what AppendJSON writes: a field added to Receipt (or
// to Unmade, BudgetLeft) fails TestReceiptAppendJSON until AppendJSON
// writes it too.
var receiptFields = map[reflect.Type]int{
	reflect.TypeFor[Receipt]():    7,
	reflect.TypeFor[Unmade]():     4,
	reflect.TypeFor[BudgetLeft](): 3,
}

func TestReceiptAppendJSON(t *testing.T) {
	t.Parallel()
	for ty, n := range receiptFields {
		if ty.NumField() != n {
			t.Fatalf("%s has %d fields, AppendJSON writes %d: write the new ones in receiptjson.go", ty, ty.NumField(), n)
		}
	}
	for _, tc := range []struct {
		name string
		r    *Receipt
		ok   bool
	}{
		{"zero", &Receipt{}, true},
		{"counts", &Receipt{Estimated: 21, Made: 1, Retries: 2, Saved: 20}, true},
		{"negative and large", &Receipt{Estimated: -1, Made: 1 << 40, Retries: -1 << 40, Saved: 9}, true},
		{"unmade", &Receipt{Estimated: 3, Unmade: &Unmade{Deduplicated: 1, ShortPages: 2, Shared: 4, NotReached: 3}}, true},
		{"budget", &Receipt{Estimated: 3, Budget: &BudgetLeft{Remaining: 59, Limit: 60, ResetSeconds: 1}}, true},
		{"both", &Receipt{Made: 1, Unmade: &Unmade{}, Budget: &BudgetLeft{}}, true},
		{"empty calls", &Receipt{Made: 1, Calls: []InspectCall{}}, true},
		{"calls: json.Marshal writes them", &Receipt{Made: 1, Calls: []InspectCall{{}}}, false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := tc.r.AppendJSON([]byte("x"))
			if ok != tc.ok {
				t.Fatalf("ok = %v, want %v", ok, tc.ok)
			}
			if !ok {
				if string(got) != "x" {
					t.Fatalf("appended %q when refusing", got)
				}
				return
			}
			want, err := json.Marshal(tc.r)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != "x"+string(want) {
				t.Fatalf("AppendJSON: %s\njson.Marshal: %s", got[1:], want)
			}
		})
	}
}

func FuzzReceiptAppendJSON(f *testing.F) {
	f.Add(1, 2, 3, 4, true, 5, 6, 7, true, 8, 9, 10)
	f.Add(0, 0, 0, 0, false, 0, 0, 0, false, 0, 0, 0)
	f.Fuzz(func(t *testing.T, e, m, r, s int, hasU bool, d, sp, nr int, hasB bool, rem, lim, reset int) {
		rc := &Receipt{Estimated: e, Made: m, Retries: r, Saved: s}
		if hasU {
			rc.Unmade = &Unmade{Deduplicated: d, ShortPages: sp, NotReached: nr}
		}
		if hasB {
			rc.Budget = &BudgetLeft{Remaining: rem, Limit: lim, ResetSeconds: reset}
		}
		got, ok := rc.AppendJSON(nil)
		want, _ := json.Marshal(rc)
		if !ok || string(got) != string(want) {
			t.Fatalf("AppendJSON: %s (%v)\njson.Marshal: %s", got, ok, want)
		}
	})
}
