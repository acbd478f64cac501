// Configuration: the settings table below is the one owner of every
// default; docs/operations.md's configuration table lists the same names.

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
	"strconv"
	"strings"
	"time"

	"paygraph/gqlhttp"
	"paygraph/graph"
	"paygraph/graph/relay"
	"paygraph/livepoll"
	"paygraph/ratelimit"
	"paygraph/restclient"
	"paygraph/sessiontoken"
	"paygraph/trusteddocs"
)

// Config is everything the gateway reads at start. Each setting comes from
// an environment variable, and a flag of the same name in lower case with
// dashes (PORT -> -port) overrides it. A zero Config is not usable: start
// from LoadConfig, which applies the settings table's defaults. The table
// documents each field once (variable, default, meaning). One convention
// holds here and in the packages the fields are handed to: a zero count
// means none (RESTMaxRetries: no retries, BreakerFailures: no circuits),
// never a sentinel such as -1.
type Config struct {
	Host string // "": every interface
	Port int
	// HealthPort is the probes' listener (health.go); 0: none.
	HealthPort int
	// SandboxOff (SANDBOX=false) makes a missing REST_BASE_URL an error at
	// start instead of the embedded demo data.
	SandboxOff      bool
	RESTBaseURL     string
	RESTStatusParam string
	RESTTimeout     time.Duration
	RESTMaxConc     int
	// RESTMaxConcBurst is restclient.LimiterConfig.RequestBurst.
	RESTMaxConcBurst int
	RESTMaxInFlight  int
	RESTMaxBody      int64
	RESTMaxPage      int64
	// Dropped are the warnings of dropped settings given (LoadConfig),
	// logged at start.
	Dropped []string

	// RESTMaxInFlightPerMerchant is at most RESTMaxInFlight (LoadConfig).
	RESTMaxInFlightPerMerchant int

	// Credential pairs the REST API has not accepted yet (issue 22,
	// restclient/unaccepted.go): their shared budgets and negative cache,
	// and the proxies whose X-Forwarded-For names the client's address.
	RESTUnaccepted restclient.UnacceptedConfig
	TrustedProxies []netip.Prefix

	// HTTPMaxConnections caps the replica's open HTTP connections (conns.go).
	HTTPMaxConnections int

	// The traffic controls of issue 17 (traffic.go).
	RateLimitRESTPerSecond      int
	RateLimitRESTBurst          int
	RateLimitRequestsPerSecond  int
	RateLimitRequestsBurst      int
	RateLimitAnonymousPerSecond int
	RateLimitAnonymousBurst     int
	// One client address's anonymous budget, charged before the shared one.
	RateLimitAnonymousPerAddressPerSecond int
	RateLimitAnonymousPerAddressBurst     int
	RefusalDelayMax                       time.Duration
	RefusalDelayMaxHeld                   int
	TrustedDocuments                      string
	TrustedDocumentsMode                  trusteddocs.Mode
	TrustedDocumentsIntrospection         bool

	RESTMaxRetries  int // REST_MAX_RETRIES; zero: none
	BreakerFailures int // BREAKER_FAILURES; zero: no circuits
	BreakerCooldown time.Duration
	LoaderWait      time.Duration
	MaxComplexity   int
	APQCacheSize    int
	APQCacheBytes   int64
	QueryCacheBytes int64
	MaxDepth        int
	MaxFields       int
	MaxQueryLength  int
	MaxBodyBytes    int64
	MaxBatch        int   // MAX_BATCH; zero: batches refused
	MaxResponse     int64 // bytes
	CompressMin     int   // bytes; 0: no compression
	RequestTimeout  time.Duration
	CORSOrigins     []string
	ShutdownGrace   time.Duration
	LogFormat       string
	LogLevel        slog.Level // LOG_LEVEL
	// LogFlushInterval is how long a log line may wait to be written with
	// others (LOG_FLUSH_INTERVAL, observe.LogBuffer); zero: one write a line.
	LogFlushInterval time.Duration
	PprofAddr        string
	RedisURL         string
	APQTTL           time.Duration
	// CursorKeys sign pagination cursors; nil when CURSOR_KEYS is unset
	// (a random key per process).
	CursorKeys *relay.Keys
	// MerchantKey keys the merchant identity (an HMAC of the credential
	// pair) in Redis keys, circuits and log tags; nil when MERCHANT_ID_KEY
	// is unset (a random key per process).
	MerchantKey    *restclient.MerchantKey
	SandboxLatency time.Duration

	// TokenKeys mints and verifies session tokens (TOKEN_KEYS); nil:
	// tokens are off, except in sandbox mode, where New makes a random key.
	TokenKeys       *sessiontoken.Keyring
	TokenMaxTTL     time.Duration
	TokenDefaultTTL time.Duration // at most TokenMaxTTL (LoadConfig)
	// CustomerDataMax is the most customer data any caller reads
	// (CUSTOMER_DATA_MAX): the two credential headers read this level, a
	// session token the lower of its own and this. Zero: full.
	CustomerDataMax sessiontoken.CustomerData

	// Subscriptions: the livepoll hub's settings (SUBSCRIPTION_*).
	Subscriptions livepoll.Config

	// The live connections' bounds (LIVE_*, issue 21: gqlhttp.Live).
	LiveMaxConnections int
	LiveMaxLifetime    time.Duration
	LiveMaxOperations  int
	LiveWriteTimeout   time.Duration
	LiveInitTimeout    time.Duration

	// CostReceipts puts extensions.cost on every answer (COST_RECEIPTS).
	CostReceipts bool
	// RESTInspector lists each REST call in the receipt (REST_INSPECTOR):
	// "auto" (on in sandbox mode only), "true" or "false".
	RESTInspector string
}

// setting is one documented configuration variable; docs/operations.md's table
// lists the same names and defaults.
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
	{"SANDBOX", "auto", "auto: the embedded sandbox with demo data when REST_BASE_URL is unset; false: REST_BASE_URL is required (production: a forgotten REST_BASE_URL stops the gateway instead of serving demo data)", func(c *Config, v string) error {
		switch v {
		case "auto":
		case "false":
			c.SandboxOff = true
		default:
			return errors.New("must be auto or false")
		}
		return nil
	}},
	{"REST_BASE_URL", "", "the REST API's {base_url}; unset: start the embedded sandbox with demo data", func(c *Config, v string) error {
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
	{"REST_STATUS_PARAM", "status", "name of the REST list's status filter query parameter", func(c *Config, v string) error {
		if v == "" || strings.ContainsAny(v, "&=?# ") {
			return errors.New("must be a plain query parameter name")
		}
		c.RESTStatusParam = v
		return nil
	}},
	{"REST_TIMEOUT", restclient.DefaultTimeout.String(), "timeout of one REST call (its operation's calls share deadlines: a hung call is cut at most 1 % later)", durationSetting(func(c *Config) *time.Duration { return &c.RESTTimeout })},
	{"REST_MAX_CONCURRENCY", strconv.Itoa(restclient.DefaultRequestLimit), "concurrent REST calls one GraphQL request may make", intSetting(1, 1024, func(c *Config) *int { return &c.RESTMaxConc })},
	{"REST_MAX_CONCURRENCY_BURST", "0", "concurrent REST calls one GraphQL request may make while its merchant has slots to spare: above REST_MAX_CONCURRENCY, a request whose own slots are taken takes more, as long as its merchant keeps REST_MAX_CONCURRENCY free for its other requests and the process has one free (REST_MAX_INFLIGHT_PER_MERCHANT and REST_MAX_INFLIGHT hold as ever); 0 or not above REST_MAX_CONCURRENCY: never more than REST_MAX_CONCURRENCY", intSetting(0, 65536, func(c *Config) *int { return &c.RESTMaxConcBurst })},
	{"REST_MAX_INFLIGHT", strconv.Itoa(restclient.DefaultMaxInFlight), "concurrent REST calls for the whole process", intSetting(1, 65536, func(c *Config) *int { return &c.RESTMaxInFlight })},
	{restMaxInFlightPerMerchant, strconv.Itoa(restclient.DefaultMaxInFlightPerMerchant), "concurrent REST calls for one credential pair, 1 to REST_MAX_INFLIGHT (unset: at most REST_MAX_INFLIGHT), so one merchant's load leaves slots for the others", intSetting(1, 65536, func(c *Config) *int { return &c.RESTMaxInFlightPerMerchant })},
	{"REST_UNACCEPTED_CALLS_PER_SECOND", strconv.Itoa(restclient.DefaultUnacceptedCallsPerSecond), "REST calls per second (burst: twice) that all credential pairs the REST API has not yet answered with a 2xx may make together, per replica; past it: RATE_LIMITED without a call. A merchant's first call costs one; invented pairs cost the REST API at most this (0: no such bound)",
		intSetting(0, 1e6, func(c *Config) *int { return &c.RESTUnaccepted.CallsPerSecond })},
	{"REST_UNACCEPTED_MAX_INFLIGHT", strconv.Itoa(restclient.DefaultUnacceptedMaxInFlight), "concurrent REST calls of credential pairs not yet accepted, per replica (one per pair at a time)",
		intSetting(1, 65536, func(c *Config) *int { return &c.RESTUnaccepted.MaxInFlight })},
	{"REST_UNACCEPTED_PER_ADDRESS_PER_SECOND", strconv.Itoa(restclient.DefaultUnacceptedPerAddressPerSecond), "one client address's part of REST_UNACCEPTED_CALLS_PER_SECOND (burst: twice; IPv6 by /64), so that one flooding address leaves the rest to merchants elsewhere (0: no per-address budget)",
		intSetting(0, 1e6, func(c *Config) *int { return &c.RESTUnaccepted.PerAddressPerSecond })},
	{"REST_REFUSED_CACHE_TTL", restclient.DefaultRefusedTTL.String(), "how long a credential pair the REST API refused (401, 403) is refused again without a REST call",
		positiveDuration(func(c *Config) *time.Duration { return &c.RESTUnaccepted.RefusedTTL })},
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
	{"REST_MAX_BODY_BYTES", strconv.Itoa(restclient.DefaultMaxBodyBytes), "largest REST body of one record (payment, payment link, checkout session), in bytes; larger: UPSTREAM_ERROR",
		int64Setting(1024, 1<<28, func(c *Config) *int64 { return &c.RESTMaxBody })},
	{"REST_MAX_PAGE_BYTES", strconv.Itoa(restclient.DefaultMaxPageBytes), "largest REST body of one list page, in bytes; larger: UPSTREAM_ERROR",
		int64Setting(1024, 1<<28, func(c *Config) *int64 { return &c.RESTMaxPage })},
	{"REST_MAX_RETRIES", "2", "retries of a REST call after a connection error or a 502/503/504 (0: none)", func(c *Config, v string) (err error) {
		c.RESTMaxRetries, err = parseInt(v, 0, 5)
		return err
	}},
	{"BREAKER_FAILURES", "5", "consecutive REST failures that open the circuit breaker (0: no breaker)", func(c *Config, v string) (err error) {
		c.BreakerFailures, err = parseInt(v, 0, 1000)
		return err
	}},
	{"BREAKER_COOLDOWN", "5s", "how long the breaker stays open before one probe call", durationSetting(func(c *Config) *time.Duration { return &c.BreakerCooldown })},
	{"LOADER_WAIT", "0s", "batch window of the loaders (REST has no batch endpoint: keep it 0)", durationSetting(func(c *Config) *time.Duration { return &c.LoaderWait })},
	{"MAX_COMPLEXITY", strconv.Itoa(graph.DefaultMaxComplexity), "most REST calls one operation may make (estimated before any is made)", intSetting(1, 1<<30, func(c *Config) *int { return &c.MaxComplexity })},
	{"APQ_CACHE_SIZE", strconv.Itoa(graph.DefaultAPQCacheSize), "automatic persisted queries kept in memory", intSetting(1, 1<<24, func(c *Config) *int { return &c.APQCacheSize })},
	{"APQ_CACHE_BYTES", strconv.Itoa(graph.DefaultAPQCacheBytes), "bytes of automatic persisted queries kept in memory (with Redis: the local cache in front of it)", func(c *Config, v string) error {
		n, err := parseInt(v, 1<<16, 1<<34)
		c.APQCacheBytes = int64(n)
		return err
	}},
	{"QUERY_CACHE_BYTES", strconv.Itoa(graph.DefaultQueryCacheBytes), "estimated heap of the parsed and validated queries kept in memory, in bytes", func(c *Config, v string) error {
		n, err := parseInt(v, 1<<16, 1<<34)
		c.QueryCacheBytes = int64(n)
		return err
	}},
	{"MAX_DEPTH", strconv.Itoa(graph.DefaultMaxDepth), "deepest selection nesting of any operation or fragment", intSetting(1, 1000, func(c *Config) *int { return &c.MaxDepth })},
	{"MAX_FIELDS", strconv.Itoa(graph.DefaultMaxFields), "most fields one operation may select (aliases counted, fragments each time spread)", intSetting(1, 1<<20, func(c *Config) *int { return &c.MaxFields })},
	{"MAX_QUERY_LENGTH", strconv.Itoa(graph.DefaultMaxQueryLength), "longest query text in bytes", intSetting(1, 1<<24, func(c *Config) *int { return &c.MaxQueryLength })},
	{"MAX_BODY_BYTES", "65536", "largest request body in bytes (larger: HTTP 413 before any of it is decoded)", func(c *Config, v string) error {
		n, err := parseInt(v, 1024, 1<<30)
		c.MaxBodyBytes = int64(n)
		return err
	}},
	{"MAX_BATCH", "10", "most operations one batched request (a JSON array body, as Apollo's batching links send) may hold; each runs as a request of its own; 0: batches refused", intSetting(0, 100, func(c *Config) *int { return &c.MaxBatch })},
	{"MAX_RESPONSE_BYTES", strconv.Itoa(graph.DefaultMaxResponseBytes), "most bytes one GraphQL response may build (larger: RESPONSE_TOO_LARGE, before it is built)", func(c *Config, v string) error {
		n, err := parseInt(v, 64<<10, 1<<30)
		c.MaxResponse = int64(n)
		return err
	}},
	{"COMPRESS_MIN_BYTES", "1024", "smallest /graphql answer compressed (gzip, or zstd when Accept-Encoding prefers it by q-value), in bytes; 0: none", intSetting(0, 1<<24, func(c *Config) *int { return &c.CompressMin })},
	{"REQUEST_TIMEOUT", "30s", "deadline of one GraphQL request, its REST calls included", durationSetting(func(c *Config) *time.Duration { return &c.RequestTimeout })},
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
	{"REDIS_URL", "", "Redis for the shared APQ store (redis://, rediss:// or unix://); unset: in-memory only", func(c *Config, v string) error {
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
	{"APQ_TTL", "24h", "how long a persisted query lives in Redis", durationSetting(func(c *Config) *time.Duration { return &c.APQTTL })},
	{"CURSOR_KEYS", "", "comma-separated pagination cursor keys, hex or base64, at least 32 bytes each: the first signs, all verify; unset: a random key per process (cursors then work on that process only)", func(c *Config, v string) (err error) {
		if v == "" {
			return nil
		}
		c.CursorKeys, err = relay.ParseKeys(v)
		return err
	}},
	{"MERCHANT_ID_KEY", "", "key of the merchant identity (an HMAC of the credential pair naming a merchant in Redis keys, circuits and log tags), hex or base64, at least 32 bytes; the same on every replica sharing REDIS_URL; unset: derived from the signing key of CURSOR_KEYS (rotating it then starts the budgets afresh), or without CURSOR_KEYS a random key per process (budgets and accepted merchants then are not shared between replicas)", func(c *Config, v string) error {
		if v == "" {
			return nil
		}
		key, err := decodeSecret(strings.TrimSpace(v))
		if err != nil {
			return errors.New("must be hex or base64 (such as `openssl rand -base64 32`)")
		}
		c.MerchantKey, err = restclient.NewMerchantKey(key)
		return err
	}},
	{"RATE_LIMIT_REST_CALLS_PER_SECOND", strconv.Itoa(ratelimit.DefaultRESTCallsPerSecond), "sustained REST calls per second per merchant, shared by all replicas through REDIS_URL (0: no REST-calls limit)",
		intSetting(0, 1e9, func(c *Config) *int { return &c.RateLimitRESTPerSecond })},
	{rateLimitRESTBurst, strconv.Itoa(ratelimit.DefaultRESTBurst), "REST calls a merchant may spend at once, at least MAX_COMPLEXITY (0: no REST-calls limit)",
		intSetting(0, 1e9, func(c *Config) *int { return &c.RateLimitRESTBurst })},
	{"RATE_LIMIT_REQUESTS_PER_SECOND", strconv.Itoa(ratelimit.DefaultRequestsPerSecond), "sustained GraphQL requests per second per merchant (0: no requests limit)",
		intSetting(0, 1e9, func(c *Config) *int { return &c.RateLimitRequestsPerSecond })},
	{"RATE_LIMIT_REQUESTS_BURST", strconv.Itoa(ratelimit.DefaultRequestsBurst), "GraphQL requests a merchant may send at once (0: no requests limit)",
		intSetting(0, 1e9, func(c *Config) *int { return &c.RateLimitRequestsBurst })},
	{"RATE_LIMIT_ANONYMOUS_PER_SECOND", strconv.Itoa(ratelimit.DefaultAnonymousPerSecond), "sustained GraphQL requests per second without a merchant the REST API has accepted (no pair, no session token, or one whose pair no REST call has proven yet), all such requests of a replica together (0: no anonymous limit)",
		intSetting(0, 1e9, func(c *Config) *int { return &c.RateLimitAnonymousPerSecond })},
	{"RATE_LIMIT_ANONYMOUS_BURST", strconv.Itoa(ratelimit.DefaultAnonymousBurst), "GraphQL requests without credentials a replica admits at once (0: no anonymous limit)",
		intSetting(0, 1e9, func(c *Config) *int { return &c.RateLimitAnonymousBurst })},
	{"RATE_LIMIT_ANONYMOUS_PER_ADDRESS_PER_SECOND", strconv.Itoa(ratelimit.DefaultAnonymousPerAddressPerSecond), "sustained GraphQL requests per second without credentials from one client address (IPv6 by /64; the forwarded address behind TRUSTED_PROXIES), charged before the replica's shared anonymous budget, in this replica's memory only (0: no per-address limit)",
		intSetting(0, 1e9, func(c *Config) *int { return &c.RateLimitAnonymousPerAddressPerSecond })},
	{"RATE_LIMIT_ANONYMOUS_PER_ADDRESS_BURST", strconv.Itoa(ratelimit.DefaultAnonymousPerAddressBurst), "GraphQL requests without credentials one client address may send at once (0: no per-address limit)",
		intSetting(0, 1e9, func(c *Config) *int { return &c.RateLimitAnonymousPerAddressBurst })},
	{"REFUSAL_DELAY_MAX", gqlhttp.DefaultRefusalDelayMax.String(), "longest a refusal of a caller the REST API has not accepted (the anonymous budget, the bounds on unaccepted credential pairs, a pair the REST API answered 401 or 403) is held before it is answered, up to its Retry-After; a closed-loop flood of such callers then sends a few requests a second instead of thousands, each costing the replica CPU. Never a merchant's own 429, nor a WebSocket or SSE operation (0: answer at once)",
		durationSetting(func(c *Config) *time.Duration { return &c.RefusalDelayMax })},
	{"REFUSAL_DELAY_MAX_HELD", strconv.Itoa(gqlhttp.DefaultRefusalDelayMaxHeld), "refusals held at once per replica (REFUSAL_DELAY_MAX), each a parked goroutine and its connection; past it they are answered at once (0: hold none)",
		intSetting(0, 65536, func(c *Config) *int { return &c.RefusalDelayMaxHeld })},
	{"TRUSTED_DOCUMENTS", "", "path of the trusted documents manifest (Apollo persisted query manifest or Relay persisted_queries.json), reloaded on SIGHUP", func(c *Config, v string) error {
		c.TrustedDocuments = v
		return nil
	}},
	{trustedDocumentsMode, string(trusteddocs.Off), "off, allow (serve listed documents by id or hash, count and log the others) or enforce (refuse what is not listed)", func(c *Config, v string) (err error) {
		c.TrustedDocumentsMode, err = trusteddocs.ParseMode(v)
		return err
	}},
	{"TRUSTED_DOCUMENTS_INTROSPECTION", "false", "enforce mode also serves introspection queries (GraphiQL, codegen)", func(c *Config, v string) (err error) {
		c.TrustedDocumentsIntrospection, err = strconv.ParseBool(v)
		if err != nil {
			return errors.New("must be true or false")
		}
		return nil
	}},
	{"LOG_FORMAT", "json", "log lines as json or text", func(c *Config, v string) error {
		if v != "json" && v != "text" {
			return errors.New("must be json or text")
		}
		c.LogFormat = v
		return nil
	}},
	{"LOG_LEVEL", "info", "lowest level logged: debug, info, warn or error; the access lines of probes (/healthz, /readyz) and /metrics scrapes are debug", func(c *Config, v string) error {
		switch strings.ToLower(v) {
		case "debug":
			c.LogLevel = slog.LevelDebug
		case "info":
			c.LogLevel = slog.LevelInfo
		case "warn":
			c.LogLevel = slog.LevelWarn
		case "error":
			c.LogLevel = slog.LevelError
		default:
			return errors.New("must be debug, info, warn or error")
		}
		return nil
	}},
	{"LOG_FLUSH_INTERVAL", "100ms", "longest a log line waits to be written with others: lines are gathered and written to stderr in one write when 4 KiB are held or this long after the first, whichever is sooner; 0: one write per line", durationSetting(func(c *Config) *time.Duration { return &c.LogFlushInterval })},
	{"PPROF_ADDR", "", "host:port for net/http/pprof, a listener of its own (keep it on 127.0.0.1); unset: off", func(c *Config, v string) error {
		if v == "" {
			return nil
		}
		if _, port, err := net.SplitHostPort(v); err != nil || port == "" {
			return errors.New("must be host:port, such as 127.0.0.1:6060")
		}
		c.PprofAddr = v
		return nil
	}},
	{"HTTP_MAX_CONNECTIONS", strconv.Itoa(DefaultMaxConnections), "open HTTP connections of this replica, and an eighth of it (at least 16) from one client address (the TCP peer; a TRUSTED_PROXIES proxy has no share), its WebSockets included; at the cap a silent connection (no request header after 1s) goes first for a new one, then one trickling its request or answer, then the one idle longest (none: the new one is closed)",
		intSetting(16, 1<<20, func(c *Config) *int { return &c.HTTPMaxConnections })},
	{"SHUTDOWN_GRACE", "20s", "how long in-flight requests may finish after SIGTERM", durationSetting(func(c *Config) *time.Duration { return &c.ShutdownGrace })},
	{"TOKEN_KEYS", "", "comma-separated 32-byte keys (64 hex digits or base64) of the session tokens of POST /auth/token: the first signs, all verify; unset: tokens off (sandbox mode: a random key)", func(c *Config, v string) (err error) {
		if v == "" {
			return nil
		}
		c.TokenKeys, err = sessiontoken.ParseKeyring(v)
		return err
	}},
	{"TOKEN_MAX_TTL", sessiontoken.DefaultMaxTTL.String(), "longest session token lifetime a mint may ask for (1s to 24h); keep a retired key in TOKEN_KEYS this long", tokenTTLSetting(func(c *Config) *time.Duration { return &c.TokenMaxTTL })},
	{"TOKEN_DEFAULT_TTL", sessiontoken.DefaultTTL.String(), "session token lifetime when a mint names none (1s to TOKEN_MAX_TTL)", tokenTTLSetting(func(c *Config) *time.Duration { return &c.TokenDefaultTTL })},
	{"CUSTOMER_DATA_MAX", "full", "most customer data (name, email, phone, address, city) any caller reads: full, masked or none. Callers with the two credential headers read this level; a session token reads the lower of its own customerData and this, and a mint asking for more is refused", func(c *Config, v string) (err error) {
		c.CustomerDataMax, err = sessiontoken.ParseCustomerData(v)
		return err
	}},
	{"SUBSCRIPTION_POLL_INTERVAL", livepoll.DefaultInterval.String(), "first wait between two REST GETs of one subscribed resource (one poll per merchant and resource, whatever the subscribers); grows to 4x while it does not change",
		positiveDuration(func(c *Config) *time.Duration { return &c.Subscriptions.Interval })},
	{"SUBSCRIPTION_WATCH_AFTER_SUCCESS", livepoll.DefaultWatchAfterSettled.String(), "how long a SUCCEEDED payment or session is still watched for a REFUNDED before its subscriptions complete",
		positiveDuration(func(c *Config) *time.Duration { return &c.Subscriptions.WatchAfterSettled })},
	{"SUBSCRIPTION_MAX_LIFETIME", livepoll.DefaultMaxLifetime.String(), "longest life of one subscription; it then completes and the client subscribes again",
		positiveDuration(func(c *Config) *time.Duration { return &c.Subscriptions.MaxLifetime })},
	{"SUBSCRIPTION_IDLE_TIMEOUT", livepoll.DefaultIdleTimeout.String(), "subscriptions of a resource unchanged this long complete",
		positiveDuration(func(c *Config) *time.Duration { return &c.Subscriptions.IdleTimeout })},
	{"SUBSCRIPTION_MAX_PER_MERCHANT", strconv.Itoa(livepoll.DefaultMaxPerMerchant), "live subscriptions of one merchant (credential pair) in this process; more: RATE_LIMITED",
		intSetting(1, 1e7, func(c *Config) *int { return &c.Subscriptions.MaxPerMerchant })},
	{"SUBSCRIPTION_MAX", strconv.Itoa(livepoll.DefaultMaxSubscriptions), "live subscriptions in this process; more: RATE_LIMITED",
		intSetting(1, 1e7, func(c *Config) *int { return &c.Subscriptions.MaxSubscriptions })},
	{"SUBSCRIPTION_MAX_PENDING", strconv.Itoa(livepoll.DefaultMaxPending), "subscriptions of credential pairs the REST API has not accepted yet, waiting for their first successful poll (not counted against SUBSCRIPTION_MAX until then); more: RATE_LIMITED",
		intSetting(1, 1e6, func(c *Config) *int { return &c.Subscriptions.MaxPending })},
	{"LIVE_MAX_CONNECTIONS", strconv.Itoa(gqlhttp.DefaultMaxConnections), "WebSocket connections and SSE streams open at once in this process (about 42 KiB each when idle); more: HTTP 503 before the upgrade",
		intSetting(1, 1e6, func(c *Config) *int { return &c.LiveMaxConnections })},
	{"LIVE_MAX_LIFETIME", gqlhttp.DefaultMaxLifetime.String(), "longest life of one WebSocket connection or SSE stream; it is then closed and the client connects again (a session token's connection also ends at the token's expiry)",
		positiveDuration(func(c *Config) *time.Duration { return &c.LiveMaxLifetime })},
	{"LIVE_MAX_OPERATIONS", strconv.Itoa(gqlhttp.DefaultMaxOperations), "operations in flight at once on one WebSocket connection; more: RATE_LIMITED",
		intSetting(1, 1024, func(c *Config) *int { return &c.LiveMaxOperations })},
	{"LIVE_INIT_TIMEOUT", gqlhttp.DefaultInitTimeout.String(), "how long a WebSocket may stay open before its connection_init; then it is closed (1002, connection initialisation timeout), having proved nothing (a connection_init without credentials is closed at once, 4403)",
		positiveDuration(func(c *Config) *time.Duration { return &c.LiveInitTimeout })},
	{"LIVE_WRITE_TIMEOUT", gqlhttp.DefaultWriteTimeout.String(), "how long a WebSocket or SSE client may take to read one message before its connection is closed",
		positiveDuration(func(c *Config) *time.Duration { return &c.LiveWriteTimeout })},
	{"SUBSCRIPTION_RESUME_WINDOW", livepoll.DefaultResumeWindow.String(), "how long a resource's transitions are kept after it was last watched, for clients resuming with lastEventId / Last-Event-ID (the newest 16; older: EVENT_ID_EXPIRED). Costs about 1 KB per transition kept in memory without REDIS_URL; with it about 5 KB per watched resource in Redis (docs/operations.md)",
		positiveDuration(func(c *Config) *time.Duration { return &c.Subscriptions.ResumeWindow })},
	{costReceipts, "true", "put extensions.cost on every answer: the operation's REST calls estimated, made and saved by deduplication, and what is left of the merchant's REST-call budget (false: none; a dry run is answered still)", func(c *Config, v string) (err error) {
		c.CostReceipts, err = strconv.ParseBool(v)
		if err != nil {
			return errors.New("must be true or false")
		}
		return nil
	}},
	{restInspector, "auto", "the REST inspector: each REST call of an operation (route, id, status, duration, bytes, retries) in its own answer's extensions.cost.calls, shown by GraphiQL; auto: on in sandbox mode only; true or false", func(c *Config, v string) error {
		if v != "auto" && v != "true" && v != "false" {
			return errors.New("must be auto, true or false")
		}
		c.RESTInspector = v
		return nil
	}},
	{"SANDBOX_LATENCY", "0s", "sandbox only: latency added to every REST call", durationSetting(func(c *Config) *time.Duration { return &c.SandboxLatency })},
}

func intSetting(lo, hi int, field func(*Config) *int) func(*Config, string) error {
	return func(c *Config, v string) (err error) {
		*field(c), err = parseInt(v, lo, hi)
		return err
	}
}

func int64Setting(lo, hi int, field func(*Config) *int64) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseInt(v, lo, hi)
		*field(c) = int64(n)
		return err
	}
}

// positiveDuration is durationSetting refusing zero (livepoll reads zero
// as its default: a zero setting would not mean what it says).
func positiveDuration(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			return errors.New("must be a positive duration such as 2s or 10m")
		}
		*field(c) = d
		return nil
	}
}

func durationSetting(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			return errors.New("must be a duration such as 250ms or 10s")
		}
		*field(c) = d
		return nil
	}
}

// tokenTTLSetting reads a token lifetime: whole seconds (the endpoint's
// ttlSeconds) from 1s to a day, past which a leaked token lives too long.
func tokenTTLSetting(field func(*Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < time.Second || d > 24*time.Hour || d%time.Second != 0 {
			return errors.New("must be whole seconds from 1s to 24h, such as 15m or 1h")
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

// restMaxInFlightPerMerchant is checked against REST_MAX_INFLIGHT once
// both are read (LoadConfig).
const restMaxInFlightPerMerchant = "REST_MAX_INFLIGHT_PER_MERCHANT"

// Checked against other settings once all are read (LoadConfig).
const (
	rateLimitRESTBurst   = "RATE_LIMIT_REST_BURST"
	trustedDocumentsMode = "TRUSTED_DOCUMENTS_MODE"
	costReceipts         = "COST_RECEIPTS"
	restInspector        = "REST_INSPECTOR"
)

// hidden settings may hold a password (redis://user:pass@host) or a key: their
// value is never echoed, neither in -help nor in an error.
var hidden = map[string]bool{"REDIS_URL": true, "CURSOR_KEYS": true, "TOKEN_KEYS": true, "MERCHANT_ID_KEY": true}

// decodeSecret reads a key given as hex (an even number of hex digits) or
// base64 (standard or URL alphabet, padded or not).
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

// LoadConfig reads the settings from getenv, then from args as flags
// (-port for PORT, and so on). The flags are registered on fs, which may
// already hold the caller's own (main's -print-schema); nil: a FlagSet of
// its own. -help lists every setting with its default and answers
// flag.ErrHelp, which is not an error to report.
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
	for _, d := range dropped {
		fs.Var(settingValue{new(string), false}, flagName(d.env), "dropped: no effect (env "+d.env+")")
	}
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	// isSet tells a setting given (env or flag) from its default.
	isSet := func(env string) bool {
		set := getenv(env) != ""
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == flagName(env) })
		return set
	}
	for _, d := range dropped {
		if isSet(d.env) {
			c.Dropped = append(c.Dropped, d.warning)
		}
	}
	perMerchantSet := isSet(restMaxInFlightPerMerchant)
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
	// One merchant's share cannot exceed the pool it is a share of: an
	// explicit value over it is a mistake; the default shrinks to fit a
	// small pool.
	if c.RESTMaxInFlight > 0 && c.RESTMaxInFlightPerMerchant > c.RESTMaxInFlight {
		if perMerchantSet {
			errs = append(errs, fmt.Errorf("%s=%d: must be at most REST_MAX_INFLIGHT (%d)",
				restMaxInFlightPerMerchant, c.RESTMaxInFlightPerMerchant, c.RESTMaxInFlight))
		} else {
			c.RESTMaxInFlightPerMerchant = c.RESTMaxInFlight
		}
	}
	// Likewise a token's default lifetime and the longest one.
	if c.TokenMaxTTL > 0 && c.TokenDefaultTTL > c.TokenMaxTTL {
		if isSet("TOKEN_DEFAULT_TTL") {
			errs = append(errs, fmt.Errorf("TOKEN_DEFAULT_TTL=%s: must be at most TOKEN_MAX_TTL (%s)", c.TokenDefaultTTL, c.TokenMaxTTL))
		} else {
			c.TokenDefaultTTL = c.TokenMaxTTL
		}
	}
	if c.SandboxOff && c.RESTBaseURL == "" {
		errs = append(errs, errors.New("SANDBOX=false: REST_BASE_URL must be set (the embedded sandbox serves only demo data)"))
	}
	errs = append(errs, c.checkTraffic()...)
	return c, errors.Join(errs...)
}

// checkTraffic checks the traffic controls against the other settings.
func (c Config) checkTraffic() []error {
	var errs []error
	// An operation that costs more REST calls than the burst could never
	// run (ratelimit's TooCostly), whatever the wait: the complexity limit
	// must refuse it first, with its own code.
	if c.RateLimitRESTPerSecond > 0 && c.RateLimitRESTBurst > 0 && c.MaxComplexity > c.RateLimitRESTBurst {
		errs = append(errs, fmt.Errorf("%s=%d: must be at least MAX_COMPLEXITY (%d), or an operation the complexity limit admits could never run",
			rateLimitRESTBurst, c.RateLimitRESTBurst, c.MaxComplexity))
	}
	if c.RESTInspector == "true" && !c.CostReceipts {
		errs = append(errs, fmt.Errorf("%s=true: needs %s=true (the inspector's calls ride in the receipt)", restInspector, costReceipts))
	}
	if c.TrustedDocumentsMode != trusteddocs.Off && c.TrustedDocuments == "" {
		errs = append(errs, fmt.Errorf("%s=%s: needs TRUSTED_DOCUMENTS, the manifest's path", trustedDocumentsMode, c.TrustedDocumentsMode))
	}
	return errs
}

// dropped are settings that no longer have an effect: still accepted
// (env or flag, any value) for one release after they were dropped, each
// given one logged at start with its warning, so that a deployment that
// sets one starts as before and is told.
var dropped = []struct{ env, warning string }{
	{"REST_TRANSPORT", "REST_TRANSPORT no longer has an effect: the REST API is called through Go's net/http transport, one connection pool per credential pair (docs/design.md)"},
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
