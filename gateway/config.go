package gateway

import (
	"encoding/base64"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"net/url"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"paygraph/gqlhttp"
	"paygraph/graph"
	"paygraph/graph/budget"
	"paygraph/graph/relay"
	"paygraph/livepoll"
	"paygraph/ratelimit"
	"paygraph/restclient"
	"paygraph/sessiontoken"
	"paygraph/trusteddocs"
)

// Config is what the gateway reads at start, each setting from an environment
// variable overridden by its flag (PORT -> -port); the settings table
// documents each. A zero count means none, never -1.
type Config struct {
	Host       string // "": every interface
	Port       int
	HealthPort int // the probes' listener (health.go); 0: none
	// SandboxOff (SANDBOX=false) makes a missing REST_BASE_URL an error.
	SandboxOff                                  bool
	RESTBaseURL, RESTStatusParam                string
	RESTTimeout                                 time.Duration
	RESTMaxConc                                 int
	RESTMaxInFlight, RESTMaxInFlightPerMerchant int
	// RESTShareCalls: a GET waits for its pair's same GET in flight
	// (restclient).
	RESTShareCalls           bool
	RESTMaxBody, RESTMaxPage int64
	// Dropped are the warnings of the dropped settings given, logged at start.
	Dropped []string

	RESTUnaccepted restclient.UnacceptedConfig
	TrustedProxies []netip.Prefix

	HTTPMaxConnections int // conns.go

	RateLimitRESTPerSecond, RateLimitRESTBurst                               int
	RateLimitRequestsPerSecond, RateLimitRequestsBurst                       int
	RateLimitAnonymousPerSecond, RateLimitAnonymousBurst                     int
	RateLimitAnonymousPerAddressPerSecond, RateLimitAnonymousPerAddressBurst int
	RefusalDelayMax                                                          time.Duration
	RefusalDelayMaxHeld                                                      int
	TrustedDocuments                                                         string
	TrustedDocumentsMode                                                     trusteddocs.Mode
	TrustedDocumentsIntrospection, Federation                                bool

	RESTMaxRetries                      int
	BreakerFailures                     int // zero: no circuits
	BreakerCooldown                     time.Duration
	MaxComplexity                       int
	APQCacheBytes, QueryCacheBytes      int64
	MaxDepth, MaxFields, MaxQueryLength int
	MaxBodyBytes                        int64
	MaxBatch                            int   // zero: batches refused
	MaxResponse                         int64 // bytes
	RequestTimeout, ShutdownGrace       time.Duration
	CORSOrigins                         []string
	LogFormat                           string
	LogLevel                            slog.Level
	PprofAddr, RedisURL                 string
	// CursorKeys sign pagination cursors; nil: a random key per process.
	CursorKeys *relay.Keys
	// MerchantKey keys the merchant identity (a pair's HMAC) in Redis,
	// circuits and log tags; nil: derived.
	MerchantKey *restclient.MerchantKey

	// TokenKeys mints and verifies session tokens; nil: off (sandbox mode:
	// random).
	TokenKeys                    *sessiontoken.Keyring
	TokenMaxTTL, TokenDefaultTTL time.Duration // the default at most the max
	// CustomerDataMax is the most customer data any caller reads; zero: full.
	CustomerDataMax sessiontoken.CustomerData
	// MCP is /mcp's mode: "on", "graphql" (any query too) or "off".
	MCP string

	Subscriptions livepoll.Config

	// The live connections' bounds (gqlhttp.Live).
	LiveMaxConnections, LiveMaxOperations              int
	LiveMaxLifetime, LiveWriteTimeout, LiveInitTimeout time.Duration

	// CostReceipts puts extensions.cost on every answer.
	CostReceipts bool
}

// setting is one configuration variable; docs/operations.md lists the same
// (config_docs_test.go).
type setting struct {
	env, def, help string
	apply          func(c *Config, v string) error
}

var settings = []setting{
	{"HOST", "", "address to listen on (an IP or host name, such as 127.0.0.1); unset: every interface", func(c *Config, v string) error {
		if v != "" && net.ParseIP(strings.Trim(v, "[]")) == nil && (strings.ContainsAny(v, ":/[] ") || len(v) > 253) {
			return errors.New("must be an IP address or a host name, without a port (PORT sets it)")
		}
		c.Host = strings.Trim(v, "[]")
		return nil
	}},
	{"PORT", "8080", "port to listen on", intSetting(0, 65535, func(c *Config) *int { return &c.Port })},
	{"HEALTH_PORT", "8088", "port of a listener of its own that answers only /healthz and /readyz, for the kubelet's probes: no client's connections can crowd them out of it (0: none; the probes then use PORT)", intSetting(0, 65535, func(c *Config) *int { return &c.HealthPort })},
	{"SANDBOX", "auto", "auto: the embedded sandbox with demo data when REST_BASE_URL is unset; false: REST_BASE_URL is required (production: a forgotten REST_BASE_URL stops the gateway instead of serving demo data)", oneOf(map[string]bool{"auto": false, "false": true}, "must be auto or false", func(c *Config) *bool { return &c.SandboxOff })},
	{"REST_BASE_URL", "", "the REST API's {base_url}; unset: start the embedded sandbox with demo data", checked(true, func(v string) bool {
		u, err := url.Parse(v)
		return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
	}, "must be an absolute http:// or https:// URL", func(c *Config) *string { return &c.RESTBaseURL })},
	{"REST_STATUS_PARAM", "status", "name of the REST list's status filter query parameter", checked(false, func(v string) bool { return v != "" && !strings.ContainsAny(v, "&=?# ") },
		"must be a plain query parameter name", func(c *Config) *string { return &c.RESTStatusParam })},
	{"REST_TIMEOUT", restclient.DefaultTimeout.String(), "timeout of one REST call", durationSetting(func(c *Config) *time.Duration { return &c.RESTTimeout })},
	{"REST_MAX_CONCURRENCY", strconv.Itoa(restclient.DefaultRequestLimit), "concurrent REST calls one GraphQL request may make", intSetting(1, 1024, func(c *Config) *int { return &c.RESTMaxConc })},
	{"REST_MAX_INFLIGHT", strconv.Itoa(restclient.DefaultMaxInFlight), "concurrent REST calls for the whole process; one credential pair takes at most a quarter of them, the pairs not yet accepted together a thirty-second", intSetting(1, 65536, func(c *Config) *int { return &c.RESTMaxInFlight })},
	{"REST_SHARE_CALLS", "true", "a GET of a credential pair the REST API has accepted that is asked for while the same GET of the same pair is in flight waits for its answer instead of being made again (false: every operation makes its own)", boolSetting(func(c *Config) *bool { return &c.RESTShareCalls })},
	{"REST_UNACCEPTED_CALLS_PER_SECOND", strconv.Itoa(restclient.DefaultUnacceptedCallsPerSecond), "REST calls per second (burst: twice) that all credential pairs the REST API has not yet answered with a 2xx may make together, per replica; past it: RATE_LIMITED without a call. A merchant's first call costs one; invented pairs cost the REST API at most this (0: no such bound)",
		intSetting(0, 1e6, func(c *Config) *int { return &c.RESTUnaccepted.CallsPerSecond })},
	{"TRUSTED_PROXIES", "", "comma-separated CIDRs of the proxies in front of the gateway whose X-Forwarded-For names the client's address (the rightmost address not in these); unset: the connection's peer is the client", func(c *Config, v string) error {
		c.TrustedProxies = nil
		for _, item := range strings.Split(v, ",") {
			if item = strings.TrimSpace(item); item == "" {
				continue
			}
			p, err := netip.ParsePrefix(item)
			if err != nil {
				a, aerr := netip.ParseAddr(item)
				if aerr != nil {
					return fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8 or an address", item)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			c.TrustedProxies = append(c.TrustedProxies, p.Masked())
		}
		return nil
	}},
	{"REST_MAX_BODY_BYTES", strconv.Itoa(restclient.DefaultMaxBodyBytes), "largest REST body of one record (payment, payment link, checkout session), in bytes, and of a list page 16 times it; larger: UPSTREAM_ERROR",
		intSetting(1024, 1<<28, func(c *Config) *int64 { return &c.RESTMaxBody })},
	{"REST_MAX_RETRIES", "2", "retries of a REST call after a connection error or a 502/503/504 (0: none)", intSetting(0, 5, func(c *Config) *int { return &c.RESTMaxRetries })},
	{"BREAKER_FAILURES", "5", "consecutive REST failures that open the circuit breaker (0: no breaker)", intSetting(0, 1000, func(c *Config) *int { return &c.BreakerFailures })},
	{"MAX_COMPLEXITY", strconv.Itoa(graph.DefaultMaxComplexity), "most REST calls one operation may make (estimated before any is made); it also selects at most twice this many fields", intSetting(1, 1<<30, func(c *Config) *int { return &c.MaxComplexity })},
	{"MAX_BODY_BYTES", "65536", "largest request body in bytes (larger: HTTP 413 before any of it is decoded); the longest query text is half of it", intSetting(1024, 1<<30, func(c *Config) *int64 { return &c.MaxBodyBytes })},
	{"MAX_BATCH", "10", "most operations one batched request (a JSON array body, as Apollo's batching links send) may hold; each runs as a request of its own; 0: batches refused", intSetting(0, 100, func(c *Config) *int { return &c.MaxBatch })},
	{"MAX_RESPONSE_BYTES", strconv.Itoa(budget.DefaultMaxResponseBytes), "most bytes one GraphQL response may build (larger: RESPONSE_TOO_LARGE, before it is built)", intSetting(64<<10, 1<<30, func(c *Config) *int64 { return &c.MaxResponse })},
	{"REQUEST_TIMEOUT", "30s", "deadline of one GraphQL request, its REST calls included; a WebSocket or SSE client must read each message within a third of it", durationSetting(func(c *Config) *time.Duration { return &c.RequestTimeout })},
	{"CORS_ALLOWED_ORIGINS", "", "comma-separated origins allowed to call /graphql from a browser (none by default)", func(c *Config, v string) error {
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
	{"REDIS_URL", "", "Redis for the shared APQ store (redis://, rediss:// or unix://); unset: in-memory only", checked(true, func(v string) bool {
		u, err := url.Parse(v)
		return err == nil && ((u.Scheme == "redis" || u.Scheme == "rediss") && u.Host != "" || u.Scheme == "unix" && u.Path != "")
	}, "must be a redis://host:port/db, rediss://... or unix:///path URL", func(c *Config) *string { return &c.RedisURL })},
	{"CURSOR_KEYS", "", "comma-separated pagination cursor keys, hex or base64, at least 32 bytes each: the first signs, all verify; unset: a random key per process (cursors then work on that process only)", parsed(true, relay.ParseKeys, func(c *Config) **relay.Keys { return &c.CursorKeys })},
	{"MERCHANT_ID_KEY", "", "key of the merchant identity (an HMAC of the credential pair naming a merchant in Redis keys, circuits and log tags), hex or base64, at least 32 bytes; the same on every replica sharing REDIS_URL; unset: derived from the signing key of CURSOR_KEYS (rotating it then starts the budgets afresh), or without CURSOR_KEYS a random key per process (budgets and accepted merchants then are not shared between replicas)", parsed(true, func(v string) (*restclient.MerchantKey, error) {
		key, err := decodeSecret(strings.TrimSpace(v))
		if err != nil {
			return nil, errors.New("must be hex or base64 (such as `openssl rand -base64 32`)")
		}
		return restclient.NewMerchantKey(key)
	}, func(c *Config) **restclient.MerchantKey { return &c.MerchantKey })},
	{"RATE_LIMIT_REST_CALLS_PER_SECOND", strconv.Itoa(ratelimit.DefaultRESTCallsPerSecond), "sustained REST calls per second per merchant, shared by all replicas through REDIS_URL (0: no REST-calls limit)",
		intSetting(0, 1e9, func(c *Config) *int { return &c.RateLimitRESTPerSecond })},
	{"RATE_LIMIT_REQUESTS_PER_SECOND", strconv.Itoa(ratelimit.DefaultRequestsPerSecond), "sustained GraphQL requests per second per merchant (0: no requests limit)",
		intSetting(0, 1e9, func(c *Config) *int { return &c.RateLimitRequestsPerSecond })},
	{"RATE_LIMIT_ANONYMOUS_PER_SECOND", strconv.Itoa(ratelimit.DefaultAnonymousPerSecond), "sustained GraphQL requests per second without a merchant the REST API has accepted (no pair, no session token, or one whose pair no REST call has proven yet), all such requests of a replica together (0: no anonymous limit)",
		intSetting(0, 1e9, func(c *Config) *int { return &c.RateLimitAnonymousPerSecond })},
	{"RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND", strconv.Itoa(ratelimit.DefaultAnonymousPerAddressPerSecond), "sustained GraphQL requests per second without credentials from one client address (IPv6 by /64; the forwarded address behind TRUSTED_PROXIES), charged before the replica's shared anonymous budget, in this replica's memory only (0: no per-address limit)",
		intSetting(0, 1e9, func(c *Config) *int { return &c.RateLimitAnonymousPerAddressPerSecond })},
	{"REFUSAL_DELAY_MAX", gqlhttp.DefaultRefusalDelayMax.String(), "longest a refusal of a caller the REST API has not accepted (the anonymous budget, the bounds on unaccepted credential pairs, a pair the REST API answered 401 or 403) is held before it is answered, up to its Retry-After; a closed-loop flood of such callers then sends a few requests a second instead of thousands, each costing the replica CPU. Never a merchant's own 429, nor a WebSocket or SSE operation (0: answer at once)",
		durationSetting(func(c *Config) *time.Duration { return &c.RefusalDelayMax })},
	{"TRUSTED_DOCUMENTS", "", "path of the trusted documents manifest (Apollo persisted query manifest or Relay persisted_queries.json), reloaded on SIGHUP", parsed(false, func(v string) (string, error) { return v, nil }, func(c *Config) *string { return &c.TrustedDocuments })},
	{"TRUSTED_DOCUMENTS_MODE", string(trusteddocs.Off), "off, allow (serve listed documents by id or hash, count and log the others) or enforce (refuse what is not listed)", parsed(false, trusteddocs.ParseMode, func(c *Config) *trusteddocs.Mode { return &c.TrustedDocumentsMode })},
	{"FEDERATION", "false", "serve the schema as a Federation 2 subgraph: Payment, PaymentLink and CheckoutSession as entities, with _service and _entities (false: the contract's schema alone)", boolSetting(func(c *Config) *bool { return &c.Federation })},
	{"TRUSTED_DOCUMENTS_INTROSPECTION", "false", "enforce mode also serves introspection queries (GraphiQL, codegen)", boolSetting(func(c *Config) *bool { return &c.TrustedDocumentsIntrospection })},
	{"LOG_FORMAT", "json", "log lines as json or text", oneOf(map[string]string{"json": "json", "text": "text"}, "must be json or text", func(c *Config) *string { return &c.LogFormat })},
	{"LOG_LEVEL", "info", "lowest level logged: debug, info, warn or error; the access lines of probes (/healthz, /readyz) and /metrics scrapes are debug", func(c *Config, v string) error {
		l, ok := map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}[strings.ToLower(v)]
		if !ok {
			return errors.New("must be debug, info, warn or error")
		}
		c.LogLevel = l
		return nil
	}},
	{"PPROF_ADDR", "", "host:port for net/http/pprof, a listener of its own (keep it on 127.0.0.1); unset: off", checked(true, func(v string) bool {
		_, port, err := net.SplitHostPort(v)
		return err == nil && port != ""
	}, "must be host:port, such as 127.0.0.1:6060", func(c *Config) *string { return &c.PprofAddr })},
	{"HTTP_MAX_CONNECTIONS", strconv.Itoa(DefaultMaxConnections), "open HTTP connections of this replica, and an eighth of it (at least 16) from one client address (the TCP peer; a TRUSTED_PROXIES proxy has no share), its WebSockets included, of which half may be WebSocket connections and SSE streams, and an eighth held refusals (REFUSAL_DELAY_MAX); at the cap a silent connection (no request header after 1s) goes first for a new one, then one trickling its request or answer, then the one idle longest (none: the new one is closed)",
		intSetting(16, 1<<20, func(c *Config) *int { return &c.HTTPMaxConnections })},
	{"SHUTDOWN_GRACE", "20s", "how long in-flight requests may finish after SIGTERM", durationSetting(func(c *Config) *time.Duration { return &c.ShutdownGrace })},
	{"TOKEN_KEYS", "", "comma-separated 32-byte keys (64 hex digits or base64) of the session tokens of POST /auth/token: the first signs, all verify; unset: tokens off (sandbox mode: a random key)", parsed(true, sessiontoken.ParseKeyring, func(c *Config) **sessiontoken.Keyring { return &c.TokenKeys })},
	{"TOKEN_MAX_TTL", sessiontoken.DefaultMaxTTL.String(), "longest session token lifetime a mint may ask for (1s to 24h); keep a retired key in TOKEN_KEYS this long; a mint naming none gets 15m, or this if shorter", tokenTTLSetting(func(c *Config) *time.Duration { return &c.TokenMaxTTL })},
	{"CUSTOMER_DATA_MAX", "full", "most customer data (name, email, phone, address, city) any caller reads: full, masked or none. Callers with the two credential headers read this level; a session token reads the lower of its own customerData and this, and a mint asking for more is refused", parsed(false, sessiontoken.ParseCustomerData, func(c *Config) *sessiontoken.CustomerData { return &c.CustomerDataMax })},
	{"SUBSCRIPTION_POLL_INTERVAL", livepoll.DefaultInterval.String(), "first wait between two REST GETs of one subscribed resource (one poll per merchant and resource, whatever the subscribers); grows to 4x while it does not change",
		positiveDuration(func(c *Config) *time.Duration { return &c.Subscriptions.Interval })},
	{"SUBSCRIPTION_MAX", strconv.Itoa(livepoll.DefaultMaxSubscriptions), "live subscriptions in this process, one merchant (credential pair) at most a twentieth of them; more: RATE_LIMITED",
		intSetting(1, 1e7, func(c *Config) *int { return &c.Subscriptions.MaxSubscriptions })},
	{"MCP", "on", "the MCP endpoint /mcp for AI agents: on (a tool per trusted document and four read tools), graphql (also a tool taking any query text) or off", oneOf(map[string]string{"on": "on", "graphql": "graphql", "off": "off"}, "must be on, graphql or off", func(c *Config) *string { return &c.MCP })},
	{"COST_RECEIPTS", "true", "put extensions.cost on every answer: the operation's REST calls estimated, made and saved by deduplication, and what is left of the merchant's REST-call budget (false: none; a dry run is answered still)", boolSetting(func(c *Config) *bool { return &c.CostReceipts })},
}

func intSetting[T int | int64](lo, hi int, field func(*Config) *T) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("must be an integer from %d to %d", lo, hi)
		}
		*field(c) = T(n)
		return nil
	}
}

func boolSetting(field func(*Config) *bool) func(*Config, string) error {
	return func(c *Config, v string) (err error) {
		if *field(c), err = strconv.ParseBool(v); err != nil {
			return errors.New("must be true or false")
		}
		return nil
	}
}

// oneOf sets a field to the value's entry in values; msg names them.
func oneOf[T any](values map[string]T, msg string, field func(*Config) *T) func(*Config, string) error {
	return func(c *Config, v string) error {
		x, ok := values[v]
		if !ok {
			return errors.New(msg)
		}
		*field(c) = x
		return nil
	}
}

// parsed sets a field to what parse makes of the value; optional: "" leaves it
// unset.
func parsed[T any](optional bool, parse func(string) (T, error), field func(*Config) *T) func(*Config, string) error {
	return func(c *Config, v string) (err error) {
		if optional && v == "" {
			return nil
		}
		*field(c), err = parse(v)
		return err
	}
}

// checked sets a string field to the value ok accepts, else answers msg;
// optional: "" leaves it unset.
func checked(optional bool, ok func(string) bool, msg string, field func(*Config) *string) func(*Config, string) error {
	return parsed(optional, func(v string) (string, error) {
		if !ok(v) {
			return "", errors.New(msg)
		}
		return v, nil
	}, field)
}

func durationSetting(field func(*Config) *time.Duration) func(*Config, string) error {
	return durationWhere(func(d time.Duration) bool { return d >= 0 }, "must be a duration such as 250ms or 10s", field)
}

// positiveDuration refuses zero too (livepoll reads zero as its default).
func positiveDuration(field func(*Config) *time.Duration) func(*Config, string) error {
	return durationWhere(func(d time.Duration) bool { return d > 0 }, "must be a positive duration such as 2s or 10m", field)
}

// tokenTTLSetting reads a token lifetime in whole seconds up to a day (a
// leaked token lives no longer).
func tokenTTLSetting(field func(*Config) *time.Duration) func(*Config, string) error {
	return durationWhere(func(d time.Duration) bool { return d >= time.Second && d <= 24*time.Hour && d%time.Second == 0 },
		"must be whole seconds from 1s to 24h, such as 15m or 1h", field)
}

// durationWhere reads a duration that ok accepts; msg says which.
func durationWhere(ok func(time.Duration) bool, msg string, field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || !ok(d) {
			return errors.New(msg)
		}
		*field(c) = d
		return nil
	}
}

// hidden settings may hold a password or a key: -help and errors never echo
// it.
var hidden = map[string]bool{"REDIS_URL": true, "CURSOR_KEYS": true, "TOKEN_KEYS": true, "MERCHANT_ID_KEY": true}

// decodeSecret reads a key in hex or base64 (standard or URL, padded or not).
func decodeSecret(s string) ([]byte, error) {
	if s != "" && len(s)%2 == 0 {
		if b, err := hex.DecodeString(s); err == nil {
			return b, nil
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil && len(b) > 0 {
			return b, nil
		}
	}
	return nil, errors.New("neither hex nor base64")
}

func flagName(env string) string { return strings.ToLower(strings.ReplaceAll(env, "_", "-")) }

// LoadConfig reads the settings from getenv, then args as flags registered on
// fs (which may hold the caller's own; nil: a new one). -help lists them with
// their defaults and answers flag.ErrHelp.
func LoadConfig(fs *flag.FlagSet, getenv func(string) string, args []string) (Config, error) {
	var c Config
	if fs == nil {
		fs = flag.NewFlagSet("paygraph", flag.ContinueOnError)
	}
	values := make(map[string]*string, len(settings))
	for _, s := range settings {
		v := s.def
		values[s.env] = &v
		// Registered holding the table's default, so that -help shows it.
		fs.Var(settingValue{values[s.env], hidden[s.env]}, flagName(s.env), s.help+" (env "+s.env+")")
		if e := getenv(s.env); e != "" {
			v = e
		}
	}
	args, droppedFlags := withoutDropped(args)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for _, d := range dropped {
		if getenv(d.env) != "" || droppedFlags[flagName(d.env)] {
			c.Dropped = append(c.Dropped, d.warning)
		}
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
	c.derive(debug.SetMemoryLimit(-1)) // GOMEMLIMIT, math.MaxInt64 when unset
	if c.SandboxOff && c.RESTBaseURL == "" {
		errs = append(errs, errors.New("SANDBOX=false: REST_BASE_URL must be set (the embedded sandbox serves only demo data)"))
	}
	if c.TrustedDocumentsMode != trusteddocs.Off && c.TrustedDocuments == "" {
		errs = append(errs, fmt.Errorf("TRUSTED_DOCUMENTS_MODE=%s: needs TRUSTED_DOCUMENTS, the manifest's path", c.TrustedDocumentsMode))
	}
	return c, errors.Join(errs...)
}

// dropped are settings without an effect, accepted for a release: a deployment
// is told what replaces it.
var dropped = []struct{ env, warning string }{
	{"REST_TRANSPORT", "REST_TRANSPORT no longer has an effect: the REST API is called through one transport, a connection pool per credential pair (docs/design.md)"},
	{"REST_MAX_CONCURRENCY_BURST", "REST_MAX_CONCURRENCY_BURST no longer has an effect: a GraphQL request makes at most REST_MAX_CONCURRENCY REST calls at once"},
	{"REST_MAX_INFLIGHT_PER_MERCHANT", "REST_MAX_INFLIGHT_PER_MERCHANT no longer has an effect: one credential pair's concurrent REST calls are a quarter of REST_MAX_INFLIGHT (at least 1); set REST_MAX_INFLIGHT"},
	{"REST_UNACCEPTED_MAX_INFLIGHT", "REST_UNACCEPTED_MAX_INFLIGHT no longer has an effect: the concurrent REST calls of credential pairs not yet accepted are REST_MAX_INFLIGHT/32 (at least 1); set REST_MAX_INFLIGHT"},
	{"REST_UNACCEPTED_PER_ADDRESS_PER_SECOND", "REST_UNACCEPTED_PER_ADDRESS_PER_SECOND no longer has an effect: one client address's part is a quarter of REST_UNACCEPTED_CALLS_PER_SECOND (at least 1); set REST_UNACCEPTED_CALLS_PER_SECOND"},
	{"REST_REFUSED_CACHE_TTL", "REST_REFUSED_CACHE_TTL no longer has an effect: a refused credential pair is refused again without a REST call for a fixed 10s"},
	{"REST_MAX_PAGE_BYTES", "REST_MAX_PAGE_BYTES no longer has an effect: a list page may be 16 times REST_MAX_BODY_BYTES; set REST_MAX_BODY_BYTES"},
	{"BREAKER_COOLDOWN", "BREAKER_COOLDOWN no longer has an effect: an open circuit sends one probe call after a fixed 5s"},
	{"LOADER_WAIT", "LOADER_WAIT no longer has an effect: the loaders have no batch window (the REST API has no batch endpoint)"},
	{"APQ_CACHE_SIZE", "APQ_CACHE_SIZE no longer has an effect: the local persisted-query cache holds at most 1000 queries, and bytes derived from GOMEMLIMIT"},
	{"APQ_CACHE_BYTES", "APQ_CACHE_BYTES no longer has an effect: the local persisted-query cache holds GOMEMLIMIT/40 bytes (1 MiB to 4 MiB); set GOMEMLIMIT"},
	{"QUERY_CACHE_BYTES", "QUERY_CACHE_BYTES no longer has an effect: the parsed-query cache holds GOMEMLIMIT/10 bytes (1 MiB to 16 MiB); set GOMEMLIMIT"},
	{"MAX_DEPTH", "MAX_DEPTH no longer has an effect: the deepest selection nesting is fixed at the contract's 15"},
	{"MAX_FIELDS", "MAX_FIELDS no longer has an effect: an operation selects at most twice MAX_COMPLEXITY fields; set MAX_COMPLEXITY"},
	{"MAX_QUERY_LENGTH", "MAX_QUERY_LENGTH no longer has an effect: the longest query text is half of MAX_BODY_BYTES; set MAX_BODY_BYTES"},
	{"COMPRESS_MIN_BYTES", "COMPRESS_MIN_BYTES no longer has an effect: answers from 1024 bytes are compressed when the client accepts it"},
	{"APQ_TTL", "APQ_TTL no longer has an effect: a persisted query lives a fixed 24h in Redis"},
	{"RATE_LIMIT_ANONYMOUS_BURST", "RATE_LIMIT_ANONYMOUS_BURST no longer has an effect: the burst is twice RATE_LIMIT_ANONYMOUS_PER_SECOND"},
	{"RATE_LIMIT_ANONYMOUS_PER_ADDRESS_BURST", "RATE_LIMIT_ANONYMOUS_PER_ADDRESS_BURST no longer has an effect: the burst is 5 times RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND"},
	{"REFUSAL_DELAY_MAX_HELD", "REFUSAL_DELAY_MAX_HELD no longer has an effect: at most an eighth of HTTP_MAX_CONNECTIONS refusals are held at once; set HTTP_MAX_CONNECTIONS"},
	{"LOG_FLUSH_INTERVAL", "LOG_FLUSH_INTERVAL no longer has an effect: each log line is written as it is logged"},
	{"TOKEN_DEFAULT_TTL", "TOKEN_DEFAULT_TTL no longer has an effect: a mint naming no lifetime gets 15m, or TOKEN_MAX_TTL if shorter"},
	{"SUBSCRIPTION_WATCH_AFTER_SUCCESS", "SUBSCRIPTION_WATCH_AFTER_SUCCESS no longer has an effect: a SUCCEEDED resource is watched a fixed 10m more for a REFUNDED"},
	{"SUBSCRIPTION_MAX_LIFETIME", "SUBSCRIPTION_MAX_LIFETIME no longer has an effect: a subscription lives at most a fixed 1h"},
	{"SUBSCRIPTION_IDLE_TIMEOUT", "SUBSCRIPTION_IDLE_TIMEOUT no longer has an effect: subscriptions of a resource unchanged for a fixed 15m complete"},
	{"SUBSCRIPTION_MAX_PER_MERCHANT", "SUBSCRIPTION_MAX_PER_MERCHANT no longer has an effect: one merchant holds at most SUBSCRIPTION_MAX/20 (at least 1); set SUBSCRIPTION_MAX"},
	{"SUBSCRIPTION_MAX_PENDING", "SUBSCRIPTION_MAX_PENDING no longer has an effect: at most a fixed 64 subscriptions of pairs not yet accepted wait for their first poll"},
	{"SUBSCRIPTION_RESUME_WINDOW", "SUBSCRIPTION_RESUME_WINDOW no longer has an effect: transitions are kept a fixed 10m for resuming clients"},
	{"LIVE_MAX_CONNECTIONS", "LIVE_MAX_CONNECTIONS no longer has an effect: WebSocket connections and SSE streams are at most half of HTTP_MAX_CONNECTIONS; set HTTP_MAX_CONNECTIONS"},
	{"LIVE_MAX_LIFETIME", "LIVE_MAX_LIFETIME no longer has an effect: a WebSocket connection or SSE stream lives at most a fixed 1h"},
	{"LIVE_MAX_OPERATIONS", "LIVE_MAX_OPERATIONS no longer has an effect: a WebSocket connection holds at most a fixed 32 operations in flight"},
	{"LIVE_INIT_TIMEOUT", "LIVE_INIT_TIMEOUT no longer has an effect: a WebSocket must send connection_init within a fixed 10s"},
	{"LIVE_WRITE_TIMEOUT", "LIVE_WRITE_TIMEOUT no longer has an effect: a live client must read one message within a third of REQUEST_TIMEOUT; set REQUEST_TIMEOUT"},
	{"RATE_LIMIT_REST_BURST", "RATE_LIMIT_REST_BURST no longer has an effect: a merchant may spend at once 5 seconds of RATE_LIMIT_REST_CALLS_PER_SECOND, and at least MAX_COMPLEXITY"},
	{"RATE_LIMIT_REQUESTS_BURST", "RATE_LIMIT_REQUESTS_BURST no longer has an effect: a merchant may send at once 2 seconds of RATE_LIMIT_REQUESTS_PER_SECOND"},
	{"SANDBOX_LATENCY", "SANDBOX_LATENCY no longer has an effect: for a sandbox with latency run go run ./sandbox/cmd/sandbox -latency 5ms and set REST_BASE_URL to it"},
	{"REST_INSPECTOR", "REST_INSPECTOR no longer has an effect: the REST inspector is on in sandbox mode only"},
}

// withoutDropped is args without the dropped settings' (unregistered) flags,
// and the names given.
func withoutDropped(args []string) ([]string, map[string]bool) {
	names := make(map[string]bool, len(dropped))
	for _, d := range dropped {
		names[flagName(d.env)] = true
	}
	given := map[string]bool{}
	var kept []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			kept = append(kept, args[i:]...)
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !names[name] {
			kept = append(kept, a)
			continue
		}
		given[name] = true
		if !hasValue && i+1 < len(args) {
			i++ // its value
		}
	}
	return kept, given
}

// derive sets the dropped settings' fields from the others and memLimit.
func (c *Config) derive(memLimit int64) {
	// One merchant takes at most a quarter of the REST calls: three others
	// busy still find slots.
	c.RESTMaxInFlightPerMerchant = max(1, c.RESTMaxInFlight/4)
	c.RESTUnaccepted.MaxInFlight = max(1, c.RESTMaxInFlight/32)
	if c.RESTUnaccepted.CallsPerSecond > 0 {
		c.RESTUnaccepted.PerAddressPerSecond = max(1, c.RESTUnaccepted.CallsPerSecond/4)
	}
	c.RESTUnaccepted.RefusedTTL = restclient.DefaultRefusedTTL
	// 16 records' worth of bytes holds a page of 100 with room.
	c.RESTMaxPage = min(16*c.RESTMaxBody, 1<<28)
	// An open circuit probes after 5s: it spares a REST API that is down,
	// finds a recovered one soon.
	c.BreakerCooldown = 5 * time.Second
	// The caches take of GOMEMLIMIT a tenth for parsed queries, a fortieth for
	// persisted ones.
	c.APQCacheBytes = min(max(memLimit/40, 1<<20), graph.DefaultAPQCacheBytes)
	c.QueryCacheBytes = min(max(memLimit/10, 1<<20), graph.DefaultQueryCacheBytes)
	// The shape limits follow cost and size: a field costs at most one REST
	// call, a body is mostly query.
	c.MaxDepth = graph.DefaultMaxDepth
	c.MaxFields = min(2*c.MaxComplexity, 1<<20)
	c.MaxQueryLength = int(c.MaxBodyBytes / 2)
	// Bursts are seconds of the rates; an operation MAX_COMPLEXITY admits fits
	// in the REST-call burst.
	c.RateLimitRESTBurst = max(5*c.RateLimitRESTPerSecond, c.MaxComplexity)
	c.RateLimitRequestsBurst = 2 * c.RateLimitRequestsPerSecond
	c.RateLimitAnonymousBurst = 2 * c.RateLimitAnonymousPerSecond
	c.RateLimitAnonymousPerAddressBurst = 5 * c.RateLimitAnonymousPerAddressPerSecond
	// Each refusal held keeps its connection open.
	c.RefusalDelayMaxHeld = c.HTTPMaxConnections / 8
	c.TokenDefaultTTL = min(sessiontoken.DefaultTTL, c.TokenMaxTTL)
	c.Subscriptions.WatchAfterSettled = livepoll.DefaultWatchAfterSettled
	c.Subscriptions.MaxLifetime = livepoll.DefaultMaxLifetime
	c.Subscriptions.IdleTimeout = livepoll.DefaultIdleTimeout
	c.Subscriptions.MaxPerMerchant = max(1, c.Subscriptions.MaxSubscriptions/20)
	c.Subscriptions.MaxPending = livepoll.DefaultMaxPending
	c.Subscriptions.ResumeWindow = livepoll.DefaultResumeWindow
	// Half the connections may be live, so that requests find the rest.
	c.LiveMaxConnections = max(1, c.HTTPMaxConnections/2)
	c.LiveMaxLifetime = gqlhttp.DefaultMaxLifetime
	c.LiveMaxOperations = gqlhttp.DefaultMaxOperations
	c.LiveInitTimeout = gqlhttp.DefaultInitTimeout
	c.LiveWriteTimeout = gqlhttp.DefaultWriteTimeout
	if c.RequestTimeout > 0 {
		c.LiveWriteTimeout = c.RequestTimeout / 3
	}
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
