package apqstore

import "testing"

// StartRedisForTest is startRedis, for the package's external tests.
func StartRedisForTest(t *testing.T) (url, addr string) {
	s := startRedis(t)
	return s.URL, s.Addr
}
