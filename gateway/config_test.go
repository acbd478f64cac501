package gateway

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// configView is the part of Config that the tests below compare.
type configView struct {
	Port                         int
	RESTBaseURL, RESTStatusParam string
	RESTTimeout                  time.Duration
	RESTMaxConc, MaxComplexity   int
	CORSOrigins                  []string
	ShutdownGrace                time.Duration
}

func viewOf(c Config) configView {
	return configView{Port: c.Port, RESTBaseURL: c.RESTBaseURL, RESTStatusParam: c.RESTStatusParam, RESTTimeout: c.RESTTimeout,
		RESTMaxConc: c.RESTMaxConc, MaxComplexity: c.MaxComplexity, CORSOrigins: c.CORSOrigins, ShutdownGrace: c.ShutdownGrace}
}

func TestConfigDefaults(t *testing.T) {
	c, err := LoadConfig(nil, func(string) string { return "" }, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := configView{Port: 8080, RESTStatusParam: "status", RESTTimeout: 10 * time.Second,
		RESTMaxConc: 16, MaxComplexity: 500, ShutdownGrace: 20 * time.Second}
	if diff := cmp.Diff(want, viewOf(c), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestConfigEnvAndFlags(t *testing.T) {
	env := map[string]string{"PORT": "9000", "REST_BASE_URL": "https://api.example.com/prefix", "REST_STATUS_PARAM": "payment_status",
		"REST_TIMEOUT": "2s", "CORS_ALLOWED_ORIGINS": "https://a.example.com, https://b.example.com"}
	c, err := LoadConfig(nil, func(k string) string { return env[k] }, []string{"-port", "9100", "-rest-timeout=750ms"})
	if err != nil {
		t.Fatal(err)
	}
	// Flags win over the environment; the rest keeps its defaults.
	want := configView{Port: 9100, RESTBaseURL: env["REST_BASE_URL"], RESTStatusParam: "payment_status",
		RESTTimeout: 750 * time.Millisecond, RESTMaxConc: 16, MaxComplexity: 500,
		CORSOrigins: []string{"https://a.example.com", "https://b.example.com"}, ShutdownGrace: 20 * time.Second}
	if diff := cmp.Diff(want, viewOf(c)); diff != "" {
		t.Errorf("config (-want +got):\n%s", diff)
	}
}

func TestConfigRefusesBadValues(t *testing.T) {
	for _, tc := range []struct{ env, value string }{
		{"PORT", "http"},
		{"PORT", "70000"},
		{"REST_BASE_URL", "localhost:9090"},
		{"REST_BASE_URL", "ftp://x"},
		{"REST_STATUS_PARAM", "a&b"},
		{"REST_TIMEOUT", "10"},
		{"REST_TIMEOUT", "-1s"},
		{"REST_MAX_CONCURRENCY", "0"},
		{"MAX_COMPLEXITY", "many"},
		{"MAX_BODY_BYTES", "10"},
		{"CORS_ALLOWED_ORIGINS", "shop.example.com"},
		{"CORS_ALLOWED_ORIGINS", "https://shop.example.com/path"},
		{"REDIS_URL", "localhost:6379"},
		{"REDIS_URL", "http://redis:6379"},
		{"REDIS_URL", "unix://"},
		{"REQUEST_TIMEOUT", "forever"},
		{"LOG_FORMAT", "xml"},
		{"LOG_LEVEL", "verbose"},
		{"PPROF_ADDR", "6060"},
	} {
		t.Run(tc.env+"="+tc.value, func(t *testing.T) {
			_, err := LoadConfig(nil, func(k string) string {
				if k == tc.env {
					return tc.value
				}
				return ""
			}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.env) {
				t.Errorf("%s=%q: error %v should name the variable", tc.env, tc.value, err)
			}
		})
	}
}

func TestConfigRedisURL(t *testing.T) {
	for _, v := range []string{"redis://redis:6379/0", "rediss://user:pw@redis.example.com:6380", "unix:///run/redis.sock"} {
		c, err := LoadConfig(nil, func(k string) string {
			if k == "REDIS_URL" {
				return v
			}
			return ""
		}, nil)
		if err != nil || c.RedisURL != v {
			t.Errorf("REDIS_URL=%s: %v, %+v", v, err, c)
		}
	}
}

// A Redis URL can hold a password: neither an error nor -help may echo it.
func TestConfigHidesRedisURL(t *testing.T) {
	const secret = "hunter2-redis-password"
	env := func(k string) string {
		if k == "REDIS_URL" {
			return "http://user:" + secret + "@redis:6379"
		}
		return ""
	}
	if _, err := LoadConfig(nil, env, nil); err == nil || strings.Contains(err.Error(), secret) {
		t.Errorf("error %v echoes the Redis password", err)
	}
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	var out strings.Builder
	fs.SetOutput(&out)
	v := "redis://user:" + secret + "@redis:6379"
	fs.Var(settingValue{&v, hidden["REDIS_URL"]}, "redis-url", "")
	fs.PrintDefaults()
	if strings.Contains(out.String(), secret) {
		t.Errorf("-help shows the Redis password: %s", out.String())
	}
}
