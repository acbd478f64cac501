package ratelimit

// Helpers of the tests that read unexported state.

// len is how many merchants the store holds.
func (s *localStore) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}
