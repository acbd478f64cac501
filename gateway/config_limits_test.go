package gateway

import (
	"errors"
	"flag"
	"strings"
	"testing"
	"time"
)

// TestConfigDerived: the former settings' fields follow the settings they
// are derived from (LoadConfig's derive), defaults included; the memory
// caps under a GOMEMLIMIT given to derive.
func TestConfigDerived(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		env  map[string]string
		mem  int64
		want func(c, m Config) map[string][2]int64 // field: got, want; m: c derived again under mem
	}{
		{name: "defaults", mem: 160 << 20, want: func(c, m Config) map[string][2]int64 {
			return map[string][2]int64{
				"RESTMaxInFlightPerMerchant":         {int64(c.RESTMaxInFlightPerMerchant), 64},
				"RESTUnaccepted.MaxInFlight":         {int64(c.RESTUnaccepted.MaxInFlight), 8},
				"RESTUnaccepted.PerAddressPerSecond": {int64(c.RESTUnaccepted.PerAddressPerSecond), 5},
				"RESTMaxPage":                        {c.RESTMaxPage, 1 << 20},
				"MaxFields":                          {int64(c.MaxFields), 1000},
				"MaxQueryLength":                     {int64(c.MaxQueryLength), 32 << 10},
				"MaxDepth":                           {int64(c.MaxDepth), 15},
				"APQCacheBytes":                      {c.APQCacheBytes, 4 << 20},
				"QueryCacheBytes":                    {c.QueryCacheBytes, 16 << 20},
				"RateLimitAnonymousBurst":            {int64(c.RateLimitAnonymousBurst), 40},
				"RateLimitAnonymousPerAddressBurst":  {int64(c.RateLimitAnonymousPerAddressBurst), 10},
				"RefusalDelayMaxHeld":                {int64(c.RefusalDelayMaxHeld), 256},
				"Subscriptions.MaxPerMerchant":       {int64(c.Subscriptions.MaxPerMerchant), 100},
				"LiveMaxConnections":                 {int64(c.LiveMaxConnections), 1024},
				"LiveWriteTimeout (s)":               {int64(c.LiveWriteTimeout / time.Second), 10},
				"TokenDefaultTTL (min)":              {int64(c.TokenDefaultTTL / time.Minute), 15},
				"BreakerCooldown (s)":                {int64(c.BreakerCooldown / time.Second), 5},
				"Subscriptions.MaxLifetime (min)":    {int64(c.Subscriptions.MaxLifetime / time.Minute), 60},
				"RESTUnaccepted.RefusedTTL (s)":      {int64(c.RESTUnaccepted.RefusedTTL / time.Second), 10},
			}
		}},
		{name: "small pool, low limits", mem: 40 << 20, env: map[string]string{
			"REST_MAX_INFLIGHT": "2", "REST_UNACCEPTED_CALLS_PER_SECOND": "2", "MAX_COMPLEXITY": "3", "MAX_BODY_BYTES": "4000",
			"RATE_LIMIT_ANONYMOUS_PER_SECOND": "3", "RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND": "4", "HTTP_MAX_CONNECTIONS": "64",
			"SUBSCRIPTION_MAX": "10", "REQUEST_TIMEOUT": "6s", "TOKEN_MAX_TTL": "10m", "REST_MAX_BODY_BYTES": "4096",
		}, want: func(c, m Config) map[string][2]int64 {
			return map[string][2]int64{
				"RESTMaxInFlightPerMerchant":         {int64(c.RESTMaxInFlightPerMerchant), 1},
				"RESTUnaccepted.MaxInFlight":         {int64(c.RESTUnaccepted.MaxInFlight), 1},
				"RESTUnaccepted.PerAddressPerSecond": {int64(c.RESTUnaccepted.PerAddressPerSecond), 1},
				"RESTMaxPage":                        {c.RESTMaxPage, 65536},
				"MaxFields":                          {int64(c.MaxFields), 6},
				"MaxQueryLength":                     {int64(c.MaxQueryLength), 2000},
				"APQCacheBytes":                      {m.APQCacheBytes, 1 << 20},
				"QueryCacheBytes":                    {m.QueryCacheBytes, 4 << 20},
				"RateLimitAnonymousBurst":            {int64(c.RateLimitAnonymousBurst), 6},
				"RateLimitAnonymousPerAddressBurst":  {int64(c.RateLimitAnonymousPerAddressBurst), 20},
				"RefusalDelayMaxHeld":                {int64(c.RefusalDelayMaxHeld), 8},
				"Subscriptions.MaxPerMerchant":       {int64(c.Subscriptions.MaxPerMerchant), 1},
				"LiveMaxConnections":                 {int64(c.LiveMaxConnections), 32},
				"LiveWriteTimeout (s)":               {int64(c.LiveWriteTimeout / time.Second), 2},
				"TokenDefaultTTL (min)":              {int64(c.TokenDefaultTTL / time.Minute), 10},
			}
		}},
		{name: "unaccepted calls off", env: map[string]string{"REST_UNACCEPTED_CALLS_PER_SECOND": "0", "RATE_LIMIT_ANONYMOUS_PER_SECOND": "0"},
			want: func(c, m Config) map[string][2]int64 {
				return map[string][2]int64{
					"RESTUnaccepted.PerAddressPerSecond": {int64(c.RESTUnaccepted.PerAddressPerSecond), 0},
					"RateLimitAnonymousBurst":            {int64(c.RateLimitAnonymousBurst), 0},
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := LoadConfig(nil, func(k string) string { return tc.env[k] }, nil)
			if err != nil {
				t.Fatal(err)
			}
			m := c
			if tc.mem != 0 {
				m.derive(tc.mem)
			}
			for field, gw := range tc.want(c, m) {
				if gw[0] != gw[1] {
					t.Errorf("%s = %d, want %d", field, gw[0], gw[1])
				}
			}
		})
	}
}

// TestConfigDroppedSettings: every dropped setting, given by env or flag
// with any value, still starts (no error) and gives its warning, which
// names it and says what replaces it; -help does not list it as a
// setting.
func TestConfigDroppedSettings(t *testing.T) {
	t.Parallel()
	for _, d := range dropped {
		t.Run(d.env, func(t *testing.T) {
			t.Parallel()
			for _, given := range []struct {
				name string
				env  map[string]string
				args []string
			}{
				{"env", map[string]string{d.env: "not even a value of its old kind"}, nil},
				{"flag", nil, []string{"-" + flagName(d.env) + "=1"}},
				{"flag and value", nil, []string{"--" + flagName(d.env), "1", "-port", "9100"}},
			} {
				c, err := LoadConfig(nil, func(k string) string { return given.env[k] }, given.args)
				if err != nil {
					t.Fatalf("%s: %v", given.name, err)
				}
				if len(c.Dropped) != 1 || !strings.HasPrefix(c.Dropped[0], d.env+" no longer has an effect: ") {
					t.Errorf("%s: warnings %q, want one naming %s and what replaces it", given.name, c.Dropped, d.env)
				}
			}
			for _, s := range settings {
				if s.env == d.env {
					t.Errorf("%s is both a setting and dropped", d.env)
				}
			}
		})
	}
	c, err := LoadConfig(nil, func(string) string { return "" }, []string{"-port", "9100"})
	if err != nil || len(c.Dropped) != 0 || c.Port != 9100 {
		t.Errorf("no dropped setting given: warnings %q, port %d, %v", c.Dropped, c.Port, err)
	}
	fs := flag.NewFlagSet("paygraph", flag.ContinueOnError)
	var help strings.Builder
	fs.SetOutput(&help)
	if _, err := LoadConfig(fs, func(string) string { return "" }, []string{"-help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("-help: %v", err)
	}
	for _, d := range dropped {
		if strings.Contains(help.String(), "-"+flagName(d.env)+" ") || strings.Contains(help.String(), "-"+flagName(d.env)+"\n") {
			t.Errorf("-help lists the dropped %s", d.env)
		}
	}
	if n := strings.Count(help.String(), "(env "); n != len(settings) {
		t.Errorf("-help lists %d settings, the table holds %d", n, len(settings))
	}
}

// TestConfigSettingsCount: at most 46 settings, each one an operator's
// decision; a new one needs a reason stronger than a constant's.
func TestConfigSettingsCount(t *testing.T) {
	t.Parallel()
	if len(settings) > 45 {
		t.Errorf("%d settings, at most 45: derive the new one from another, or fix it as a constant with a reason", len(settings))
	}
}
