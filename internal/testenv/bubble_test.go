package testenv

import (
	"testing"
	"testing/synctest"
)

func TestBubbleGoroutines(t *testing.T) {
	t.Parallel()
	if n := BubbleGoroutines(); n != 0 {
		t.Errorf("outside a bubble: %d, want 0", n)
	}
	synctest.Test(t, func(t *testing.T) {
		base := BubbleGoroutines()
		if base < 1 {
			t.Fatalf("the test's own goroutine not counted: %d", base)
		}
		stop := make(chan struct{})
		for range 3 {
			go func() { <-stop }()
		}
		synctest.Wait()
		if n := BubbleGoroutines(); n != base+3 {
			t.Errorf("with 3 more in the bubble: %d, want %d", n, base+3)
		}
		close(stop)
		synctest.Wait()
		if n := BubbleGoroutines(); n != base {
			t.Errorf("after they ended: %d, want %d", n, base)
		}
	})
}
