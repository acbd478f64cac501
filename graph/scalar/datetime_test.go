package scalar

import (
	"testing"
	"time"
)

// appendDateTimeRef is what AppendDateTime writes: time's own formatter.
func appendDateTimeRef(b []byte, t time.Time) []byte {
	return t.UTC().AppendFormat(b, dateTimeLayout)
}

func TestAppendDateTime(t *testing.T) {
	t.Parallel()
	east := time.FixedZone("east", 6*3600+30*60)
	for _, tc := range []struct {
		name string
		t    time.Time
	}{
		{"zero", time.Time{}},
		{"unix 0", time.Unix(0, 0)},
		{"a record's", time.Date(2026, 11, 24, 7, 30, 0, 123_000_000, time.UTC)},
		{"nanoseconds truncated", time.Date(2026, 12, 31, 23, 59, 59, 999_999_999, time.UTC)},
		{"sub-millisecond", time.Date(2026, 1, 2, 3, 4, 5, 999_999, time.UTC)},
		{"another zone", time.Date(2026, 1, 1, 0, 10, 0, 5_000_000, east)},
		{"leap day", time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC)},
		{"year 1", time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"year 9999", time.Date(9999, 12, 31, 23, 59, 59, 999_000_000, time.UTC)},
		{"year 10000: AppendFormat", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"year -1: AppendFormat", time.Date(-1, 6, 1, 0, 0, 0, 0, time.UTC)},
		{"year 0", time.Date(0, 3, 1, 0, 0, 0, 0, time.UTC)},
		{"with a monotonic reading", time.Now()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(AppendDateTime([]byte(`"`), tc.t))
			want := string(appendDateTimeRef([]byte(`"`), tc.t))
			if got != want {
				t.Fatalf("AppendDateTime %s, AppendFormat %s", got, want)
			}
		})
	}
}

func FuzzAppendDateTime(f *testing.F) {
	f.Add(int64(0), int64(0), 0)
	f.Add(int64(1795000000), int64(123456789), 3600)
	f.Add(int64(-62135596800), int64(0), 0)
	f.Add(int64(253402300799), int64(999999999), -3600)
	f.Fuzz(func(t *testing.T, sec, nsec int64, offset int) {
		tm := time.Unix(sec, nsec).In(time.FixedZone("z", offset%(18*3600)))
		if got, want := string(AppendDateTime(nil, tm)), string(appendDateTimeRef(nil, tm)); got != want {
			t.Fatalf("%d.%d: AppendDateTime %s, AppendFormat %s", sec, nsec, got, want)
		}
	})
}

func BenchmarkAppendDateTime(b *testing.B) {
	tm := time.Date(2026, 11, 24, 7, 30, 0, 123_000_000, time.UTC)
	buf := make([]byte, 0, 32)
	b.Run("AppendFormat", func(b *testing.B) {
		for b.Loop() {
			buf = appendDateTimeRef(buf[:0], tm)
		}
	})
	b.Run("by hand", func(b *testing.B) {
		for b.Loop() {
			buf = AppendDateTime(buf[:0], tm)
		}
	})
}
