package main

import (
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"paygraph/graph"
	"paygraph/graph/relay"
)

// config is everything the gateway reads at start. Each setting comes from
// an environment variable, and a flag of the same name in lower case with
// dashes (PORT -> -port) overrides it.
type config struct {
	Port            int
	RESTBaseURL     string
	RESTStatusParam string
	RESTTimeout     time.Duration
	RESTMaxConc     int
	RESTMaxInFlight int
	RESTMaxRetries  int
	BreakerFailures int
	BreakerCooldown time.Duration
	LoaderWait      time.Duration
	MaxComplexity   int
	APQCacheSize    int
	MaxDepth        int
	MaxFields       int
	MaxQueryLength  int
	MaxBodyBytes    int64
	MaxResponse     int64 // bytes
	RequestTimeout  time.Duration
	CORSOrigins     []string
	ShutdownGrace   time.Duration
	PrintSchema     bool
	LogFormat       string
	PprofAddr       string
	RedisURL        string
	APQTTL          time.Duration
	// CursorKeys sign pagination cursors; nil when CURSOR_KEYS is unset
	// (a random key per process).
	CursorKeys *relay.Keys
	// tracing is set by run when the OTEL_* environment turned tracing on.
	tracing bool
	// restTransport replaces the tuned transport to the REST API (tests and
	// benchmarks with a stub REST API).
	restTransport http.RoundTripper
	// demo is set by run in sandbox mode only: GraphiQL is then pre-filled
	// with these credentials and an example query. Never from the
	// environment, so a real deployment pre-fills nothing.
	demo           *demoSettings
	HealthCheck    bool
	SandboxLatency time.Duration
}

type demoSettings struct {
	Headers map[string]string
	Query   string
}

// setting is one documented configuration variable; README.md's table
// lists the same names and defaults.
type setting struct {
	env, def, help string
	apply          func(c *config, v string) error
}

var settings = []setting{
	{"PORT", "8080", "port to listen on", intSetting(0, 65535, func(c *config) *int { return &c.Port })},
	{"REST_BASE_URL", "", "the REST API's {base_url}; unset: start the embedded sandbox with demo data", func(c *config, v string) error {
		if v == "" {
			return nil
		}
		u, err := url.Parse(v)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return errors.New("must be an absolute http:// or https:// URL")
		}
		c.RESTBaseURL = v
		return nil
	}},
	{"REST_STATUS_PARAM", "status", "name of the REST list's status filter query parameter", func(c *config, v string) error {
		if v == "" || strings.ContainsAny(v, "&=?# ") {
			return errors.New("must be a plain query parameter name")
		}
		c.RESTStatusParam = v
		return nil
	}},
	{"REST_TIMEOUT", "10s", "timeout of one REST call", durationSetting(func(c *config) *time.Duration { return &c.RESTTimeout })},
	{"REST_MAX_CONCURRENCY", "16", "concurrent REST calls one GraphQL request may make", intSetting(1, 1024, func(c *config) *int { return &c.RESTMaxConc })},
	{"REST_MAX_INFLIGHT", "256", "concurrent REST calls for the whole process", intSetting(1, 65536, func(c *config) *int { return &c.RESTMaxInFlight })},
	{"REST_MAX_RETRIES", "2", "retries of a REST call after a connection error or a 502/503/504 (0: none)", func(c *config, v string) (err error) {
		c.RESTMaxRetries, err = parseInt(v, 0, 5)
		return err
	}},
	{"BREAKER_FAILURES", "5", "consecutive REST failures that open the circuit breaker (0: no breaker)", func(c *config, v string) (err error) {
		c.BreakerFailures, err = parseInt(v, 0, 1000)
		return err
	}},
	{"BREAKER_COOLDOWN", "5s", "how long the breaker stays open before one probe call", durationSetting(func(c *config) *time.Duration { return &c.BreakerCooldown })},
	{"LOADER_WAIT", "0s", "batch window of the loaders (REST has no batch endpoint: keep it 0)", durationSetting(func(c *config) *time.Duration { return &c.LoaderWait })},
	{"MAX_COMPLEXITY", "5000", "largest estimated REST fan-out of one operation", intSetting(1, 1<<30, func(c *config) *int { return &c.MaxComplexity })},
	{"APQ_CACHE_SIZE", "1000", "automatic persisted queries kept in memory", intSetting(1, 1<<24, func(c *config) *int { return &c.APQCacheSize })},
	{"MAX_DEPTH", "15", "deepest selection nesting of one operation", intSetting(1, 1000, func(c *config) *int { return &c.MaxDepth })},
	{"MAX_FIELDS", "1000", "most fields (aliases counted) one operation may select", intSetting(1, 1<<20, func(c *config) *int { return &c.MaxFields })},
	{"MAX_QUERY_LENGTH", "32768", "longest query text in bytes", intSetting(1, 1<<24, func(c *config) *int { return &c.MaxQueryLength })},
	{"MAX_BODY_BYTES", "262144", "largest request body in bytes", func(c *config, v string) error {
		n, err := parseInt(v, 1024, 1<<30)
		c.MaxBodyBytes = int64(n)
		return err
	}},
	{"MAX_RESPONSE_BYTES", strconv.Itoa(graph.DefaultMaxResponseBytes), "most bytes one GraphQL response may build (larger: RESPONSE_TOO_LARGE, before it is built)", func(c *config, v string) error {
		n, err := parseInt(v, 64<<10, 1<<30)
		c.MaxResponse = int64(n)
		return err
	}},
	{"REQUEST_TIMEOUT", "30s", "deadline of one GraphQL request, its REST calls included", durationSetting(func(c *config) *time.Duration { return &c.RequestTimeout })},
	{"CORS_ALLOWED_ORIGINS", "", "comma-separated origins allowed to call /graphql from a browser (none by default)", func(c *config, v string) error {
		c.CORSOrigins = nil
		for _, o := range strings.Split(v, ",") {
			if o = strings.TrimSpace(o); o == "" {
				continue
			}
			if u, err := url.Parse(o); o != "*" && (err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Path != "") {
				return fmt.Errorf("%q is not an origin like https://shop.example.com", o)
			}
			c.CORSOrigins = append(c.CORSOrigins, o)
		}
		return nil
	}},
	{"REDIS_URL", "", "Redis for the shared APQ store (redis://, rediss:// or unix://); unset: in-memory only", func(c *config, v string) error {
		if v == "" {
			return nil
		}
		u, err := url.Parse(v)
		if err != nil || !(u.Scheme == "redis" || u.Scheme == "rediss") || u.Host == "" {
			if err != nil || u.Scheme != "unix" || u.Path == "" {
				return errors.New("must be a redis://host:port/db, rediss://... or unix:///path URL")
			}
		}
		c.RedisURL = v
		return nil
	}},
	{"APQ_TTL", "24h", "how long a persisted query lives in Redis", durationSetting(func(c *config) *time.Duration { return &c.APQTTL })},
	{"CURSOR_KEYS", "", "comma-separated pagination cursor keys, hex or base64, at least 32 bytes each: the first signs, all verify; unset: a random key per process (cursors then work on that process only)", func(c *config, v string) (err error) {
		if v == "" {
			return nil
		}
		c.CursorKeys, err = relay.ParseKeys(v)
		return err
	}},
	{"LOG_FORMAT", "json", "log lines as json or text", func(c *config, v string) error {
		if v != "json" && v != "text" {
			return errors.New("must be json or text")
		}
		c.LogFormat = v
		return nil
	}},
	{"PPROF_ADDR", "", "host:port for net/http/pprof, a listener of its own (keep it on 127.0.0.1); unset: off", func(c *config, v string) error {
		if v == "" {
			return nil
		}
		if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
			return errors.New("must be host:port, such as 127.0.0.1:6060")
		}
		c.PprofAddr = v
		return nil
	}},
	{"SHUTDOWN_GRACE", "20s", "how long in-flight requests may finish after SIGTERM", durationSetting(func(c *config) *time.Duration { return &c.ShutdownGrace })},
	{"SANDBOX_LATENCY", "0s", "sandbox only: latency added to every REST call", durationSetting(func(c *config) *time.Duration { return &c.SandboxLatency })},
}

func intSetting(lo, hi int, field func(*config) *int) func(*config, string) error {
	return func(c *config, v string) (err error) {
		*field(c), err = parseInt(v, lo, hi)
		return err
	}
}

func durationSetting(field func(*config) *time.Duration) func(*config, string) error {
	return func(c *config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return errors.New("must be a duration such as 250ms or 10s")
		}
		*field(c) = d
		return nil
	}
}

func parseInt(v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("must be an integer from %d to %d", lo, hi)
	}
	return n, nil
}

// hidden settings may hold a password (redis://user:pass@host) or a key: their
// value is never echoed, neither in -help nor in an error.
var hidden = map[string]bool{"REDIS_URL": true, "CURSOR_KEYS": true}

func flagName(env string) string { return strings.ToLower(strings.ReplaceAll(env, "_", "-")) }

// loadConfig reads settings from getenv, then from args as flags.
func loadConfig(getenv func(string) string, args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("paygraph", flag.ContinueOnError)
	values := make(map[string]*string, len(settings))
	for _, s := range settings {
		v := s.def
		if e := getenv(s.env); e != "" {
			v = e
		}
		values[s.env] = new(string)
		fs.Var(settingValue{values[s.env], hidden[s.env]}, flagName(s.env), s.help+" (env "+s.env+")")
		*values[s.env] = v
	}
	fs.BoolVar(&c.PrintSchema, "print-schema", false, "print the GraphQL schema (SDL) and exit")
	fs.BoolVar(&c.HealthCheck, "healthcheck", false, "probe http://127.0.0.1:$PORT/healthz and exit 0 if healthy (for container health checks: no shell needed)")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	var errs []error
	for _, s := range settings {
		if err := s.apply(&c, *values[s.env]); err != nil {
			shown := strconv.Quote(*values[s.env])
			if hidden[s.env] {
				shown = "(value hidden)"
			}
			errs = append(errs, fmt.Errorf("%s=%s: %w", s.env, shown, err))
		}
	}
	return c, errors.Join(errs...)
}

// settingValue is a string flag whose value -help may not show.
type settingValue struct {
	v      *string
	hidden bool
}

func (s settingValue) String() string {
	if s.v == nil || s.hidden {
		return ""
	}
	return *s.v
}

func (s settingValue) Set(v string) error { *s.v = v; return nil }

// flagHelp is returned when -h asked for usage, which is not an error.
var flagHelp = flag.ErrHelp
