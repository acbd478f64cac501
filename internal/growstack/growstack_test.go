package growstack

import "testing"

// TestGrowDoesNotAllocate: the buffers stay on the stack (an escaped one
// would be a heap allocation per request, and grow nothing).
func TestGrowDoesNotAllocate(t *testing.T) {
	for _, tc := range []struct {
		name string
		grow func()
	}{
		{"Request", Request},
		{"Call", Call},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if n := testing.AllocsPerRun(100, tc.grow); n != 0 {
				t.Fatalf("%s allocates %.0f times", tc.name, n)
			}
		})
	}
}
