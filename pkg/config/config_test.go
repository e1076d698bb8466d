package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/tockhq/tock/pkg/config"
)

func TestEnv(t *testing.T) {
	t.Parallel()

	t.Run("ReportsAllProblemsTogether", func(t *testing.T) {
		t.Parallel()
		e := config.FromMap(map[string]string{
			"TOCK_DB_MAX_CONNS": "lots",
			"TOCK_HORIZON":      "10 minutes",
			"TOCK_DEBUG":        "yes please",
		})
		common := config.ReadCommon(e, config.Worker)
		_ = e.Duration("TOCK_HORIZON", 10*time.Minute)
		_ = e.Bool("TOCK_DEBUG", false)
		_ = e.Required("TOCK_ADMIN_TOKEN", "the dashboard authenticates its administrator with it")
		e.Check(errors.New("TOCK_SHARDS and TOCK_SHARD disagree"))

		err := e.Err()
		require.Error(t, err)
		for _, want := range []string{
			`TOCK_DB_MAX_CONNS="lots"`,
			`TOCK_HORIZON="10 minutes"`,
			`TOCK_DEBUG="yes please"`,
			"TOCK_ADMIN_TOKEN must be set: the dashboard authenticates its administrator with it",
			"TOCK_SHARDS and TOCK_SHARD disagree",
		} {
			require.ErrorContains(t, err, want)
		}
		var joined interface{ Unwrap() []error }
		require.ErrorAs(t, err, &joined)
		require.Len(t, joined.Unwrap(), 5, "one error per problem")
		require.Equal(t, 6, common.DBMaxConns, "a bad value still yields the default, so start-up can report everything")
	})

	t.Run("AppliesDefaults", func(t *testing.T) {
		t.Parallel()
		e := config.FromMap(map[string]string{"TOCK_LOG_LEVEL": "   "})
		got := config.ReadCommon(e, config.Worker)
		require.NoError(t, e.Err())
		require.False(t, got.Secrets.Encrypts())
		got.Secrets = nil
		require.Equal(t, config.Common{
			DatabaseURL: "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable",
			DBMaxConns:  6,
			RedisURL:    "redis://127.0.0.1:6379/0",
			RedisPrefix: "tock",
			RedisShards: 1,
			LogLevel:    "info",
		}, got, "a blank variable counts as unset")
	})

	t.Run("PoolsFitEachService", func(t *testing.T) {
		t.Parallel()
		for s, want := range map[config.Service]int{config.Dashboard: 8, config.Scheduler: 3, config.Worker: 6} {
			require.Equal(t, want, config.ReadCommon(config.FromMap(nil), s).DBMaxConns, "%s", s)
		}
	})

	t.Run("ReadsValues", func(t *testing.T) {
		t.Parallel()
		e := config.FromMap(map[string]string{
			"TOCK_DATABASE_URL":        " postgres://db/tock ",
			"TOCK_DATABASE_DIRECT_URL": "postgres://db:5432/tock",
			"TOCK_DB_MAX_CONNS":        "1000",
			"TOCK_REDIS_URL":           "rediss://cache:6380/1",
			"TOCK_REDIS_PREFIX":        "prod",
			"TOCK_REDIS_CLUSTER":       "true",
			"TOCK_REDIS_ADDRS":         "10.0.0.1:6379, 10.0.0.2:6379",
			"TOCK_REDIS_SHARDS":        "8",
			"TOCK_LOG_LEVEL":           "debug",
			"TOCK_HORIZON":             "90s",
			"TOCK_DEBUG":               "1",
			"TOCK_ADMIN_TOKEN":         "s3cret",
		})
		got := config.ReadCommon(e, config.Worker)
		require.False(t, got.Secrets.Encrypts(), "no TOCK_SECRET_KEY: secrets are kept as they are")
		got.Secrets = nil
		require.Equal(t, config.Common{
			DatabaseURL:       "postgres://db/tock",
			DatabaseDirectURL: "postgres://db:5432/tock",
			DBMaxConns:        1000,
			RedisURL:          "rediss://cache:6380/1",
			RedisPrefix:       "prod",
			RedisCluster:      true,
			RedisAddrs:        []string{"10.0.0.1:6379", "10.0.0.2:6379"},
			RedisShards:       8,
			LogLevel:          "debug",
		}, got, "values are trimmed")
		require.Equal(t, 90*time.Second, e.Duration("TOCK_HORIZON", time.Minute))
		require.True(t, e.Bool("TOCK_DEBUG", false))
		require.Equal(t, "s3cret", e.Required("TOCK_ADMIN_TOKEN", "why"))
		e.Check(nil)
		require.NoError(t, e.Err())
	})

	t.Run("RejectsOutOfRange", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name string
			val  string
			read func(*config.Env)
		}{
			{"IntBelowRange", "0", func(e *config.Env) { e.Int("V", 5, 1, 10) }},
			{"IntAboveRange", "11", func(e *config.Env) { e.Int("V", 5, 1, 10) }},
			{"IntNotNumber", "5x", func(e *config.Env) { e.Int("V", 5, 1, 10) }},
			{"DurationNegative", "-1s", func(e *config.Env) { e.Duration("V", time.Second) }},
			{"DurationNoUnit", "30", func(e *config.Env) { e.Duration("V", time.Second) }},
			{"BoolWord", "on", func(e *config.Env) { e.Bool("V", false) }},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()
				e := config.FromMap(map[string]string{"V": tt.val})
				tt.read(e)
				require.ErrorContains(t, e.Err(), `V="`+tt.val+`"`)
			})
		}
	})

	t.Run("RequiredMissingOrBlank", func(t *testing.T) {
		t.Parallel()
		e := config.FromMap(map[string]string{"B": " "})
		require.Empty(t, e.Required("A", "reason a"))
		require.Empty(t, e.Required("B", "reason b"))
		err := e.Err()
		require.ErrorContains(t, err, "A must be set: reason a")
		require.ErrorContains(t, err, "B must be set: reason b")
	})
}

// TestReadScheduling: the settings the dashboard, scheduler and worker must
// agree on have one default and one check, whichever service reads them.
func TestReadScheduling(t *testing.T) {
	t.Parallel()
	e := config.FromMap(nil)
	require.Equal(t, config.Scheduling{Horizon: 10 * time.Minute, MisfireThreshold: time.Minute}, config.ReadScheduling(e))
	require.NoError(t, e.Err())

	e = config.FromMap(map[string]string{"TOCK_LOAD_HORIZON": "5m", "TOCK_MISFIRE_THRESHOLD": "30s"})
	require.Equal(t, config.Scheduling{Horizon: 5 * time.Minute, MisfireThreshold: 30 * time.Second}, config.ReadScheduling(e))
	require.NoError(t, e.Err())

	e = config.FromMap(map[string]string{"TOCK_LOAD_HORIZON": "500ms", "TOCK_MISFIRE_THRESHOLD": "0s"})
	config.ReadScheduling(e)
	require.ErrorContains(t, e.Err(), "TOCK_LOAD_HORIZON=500ms must be at least 1s")
	require.ErrorContains(t, e.Err(), "TOCK_MISFIRE_THRESHOLD=0s must be positive")
}

// TestFromOS reads the process environment; t.Setenv rules out t.Parallel.
func TestFromOS(t *testing.T) {
	t.Run("ReadsProcessEnvironment", func(t *testing.T) {
		t.Setenv("TOCK_TEST_CONFIG_VALUE", " from-os ")
		e := config.FromOS()
		require.Equal(t, "from-os", e.String("TOCK_TEST_CONFIG_VALUE", "def"))
		require.Equal(t, "def", e.String("TOCK_TEST_CONFIG_UNSET_VALUE", "def"))
		require.NoError(t, e.Err())
	})
}

func TestReadTracing(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		env  map[string]string
		want config.Tracing
		err  string
	}{
		{name: "OffByDefault"},
		{name: "OnWithTheEndpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
			want: config.Tracing{Endpoint: "http://collector:4318"}},
		{name: "OnWithTheTracesEndpoint", env: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "https://collector/v1/traces"},
			want: config.Tracing{Endpoint: "https://collector/v1/traces"}},
		{name: "HTTPProtobufIsTheProtocol", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"},
			want: config.Tracing{Endpoint: "http://c:4318"}},
		{name: "SDKDisabled", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_SDK_DISABLED": "true"}},
		{name: "ExporterNone", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "none"}},
		{name: "GRPCRefused", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
			want: config.Tracing{Endpoint: "http://c:4317"}, err: `OTEL_EXPORTER_OTLP_PROTOCOL="grpc"`},
		{name: "EndpointWithoutScheme", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
			want: config.Tracing{Endpoint: "collector:4318"}, err: `OTEL_EXPORTER_OTLP_ENDPOINT="collector:4318" is not a URL`},
		{name: "OtherExporterRefused", env: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318", "OTEL_TRACES_EXPORTER": "zipkin"},
			want: config.Tracing{Endpoint: "http://c:4318"}, err: `OTEL_TRACES_EXPORTER="zipkin"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := config.FromMap(tt.env)
			got := config.ReadTracing(e)
			require.Equal(t, tt.want, got)
			require.Equal(t, tt.want.Endpoint != "", got.On())
			if tt.err == "" {
				require.NoError(t, e.Err())
			} else {
				require.ErrorContains(t, e.Err(), tt.err)
			}
		})
	}
}

// TestReadSecrets reads the operator key from the variable or a file, with
// previous keys, and refuses a malformed or short one without quoting it.
func TestReadSecrets(t *testing.T) {
	t.Parallel()
	k1 := "BwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwcHBwc="
	k2 := "CQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQkJCQk="
	file := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.WriteFile(file, []byte(k1+"\n"), 0o600))
	for name, env := range map[string]map[string]string{
		"Variable": {"TOCK_SECRET_KEY": k1, "TOCK_SECRET_KEY_PREVIOUS": k2},
		"File":     {"TOCK_SECRET_KEY_FILE": file},
	} {
		e := config.FromMap(env)
		box := config.ReadSecrets(e)
		require.NoError(t, e.Err(), name)
		require.True(t, box.Encrypts(), name)
	}
	for name, env := range map[string]map[string]string{
		"Short":       {"TOCK_SECRET_KEY": "c2hvcnQ="},
		"NotBase64":   {"TOCK_SECRET_KEY": "not a key!"},
		"Both":        {"TOCK_SECRET_KEY": k1, "TOCK_SECRET_KEY_FILE": file},
		"NoFile":      {"TOCK_SECRET_KEY_FILE": "/nonexistent/key"},
		"BadPrevious": {"TOCK_SECRET_KEY": k1, "TOCK_SECRET_KEY_PREVIOUS": "c2hvcnQ="},
	} {
		e := config.FromMap(env)
		config.ReadSecrets(e)
		require.Error(t, e.Err(), name)
		require.NotContains(t, e.Err().Error(), k1, name)
	}
}
