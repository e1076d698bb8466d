package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// invoke runs the command line with env as the whole environment.
func invoke(t *testing.T, env map[string]string, stdin string, args ...string) (out, errOut string, code int) {
	t.Helper()
	var o, e bytes.Buffer
	a := &app{in: strings.NewReader(stdin), out: &o, errOut: &e, getenv: func(k string) string { return env[k] }}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetOut(&o)
	root.SetErr(&e)
	code = a.exit(root.ExecuteContext(context.Background()))
	return o.String(), e.String(), code
}

func TestExitCodes(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		w.Write([]byte(`{"error":{"code":"not_found","message":"job not found"}}`))
	}))
	defer srv.Close()
	env := map[string]string{"TOCK_URL": srv.URL, "TOCK_TOKEN": "secret-token-1234", "HOME": t.TempDir()}
	for _, tt := range []struct {
		args []string
		code int
	}{
		{[]string{"--help"}, 0},
		{[]string{"jobs", "list", "--help"}, 0},
		{[]string{"apply", "--help"}, 0},
		{[]string{"jobs", "get", "x"}, 3},
		{[]string{"jobs", "nope"}, 2},
		{[]string{"jobs", "get"}, 2},
		{[]string{"jobs", "list", "--bogus"}, 2},
		{[]string{"runs", "list", "--since", "yesterday"}, 2},
		{[]string{"-o", "xml", "jobs", "list"}, 2},
	} {
		out, errOut, code := invoke(t, env, "", tt.args...)
		require.Equal(t, tt.code, code, "tock %v: %s%s", tt.args, out, errOut)
		require.NotContains(t, out+errOut, "secret-token-1234")
	}
}

func TestNoServerConfigured(t *testing.T) {
	t.Parallel()
	_, errOut, code := invoke(t, map[string]string{"HOME": t.TempDir()}, "", "jobs", "list")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "run tock login, or set TOCK_URL and TOCK_TOKEN")
}

func TestLoginWritesPrivateConfig(t *testing.T) {
	t.Parallel()
	const token = "secret-token-5678"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			w.WriteHeader(http.StatusUnauthorized)
			w.Write([]byte(`{"error":{"code":"unauthorized","message":"unknown token"}}`))
			return
		}
		w.Write([]byte(`{"id":"u1","name":"ops","role":"user"}`))
	}))
	defer srv.Close()
	xdg := filepath.Join(t.TempDir(), "xdg")
	env := map[string]string{"XDG_CONFIG_HOME": xdg}

	out, errOut, code := invoke(t, env, "wrong-token\n", "login", "--url", srv.URL)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "unknown token")
	require.NotContains(t, out+errOut, "wrong-token")
	_, err := os.Stat(filepath.Join(xdg, "tock", "config.json"))
	require.ErrorIs(t, err, os.ErrNotExist, "a refused token is not kept")

	out, errOut, code = invoke(t, env, token+"\n", "login", "--url", srv.URL)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "logged in to "+srv.URL+" as ops (user)")
	require.NotContains(t, out+errOut, token)
	file := filepath.Join(xdg, "tock", "config.json")
	st, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), st.Mode().Perm())
	dir, err := os.Stat(filepath.Dir(file))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), dir.Mode().Perm())

	// The saved config is used; the environment overrides it.
	cfg, err := loadConfig(file)
	require.NoError(t, err)
	require.Equal(t, config{URL: srv.URL, Token: token}, cfg)
	_, errOut, code = invoke(t, map[string]string{"XDG_CONFIG_HOME": xdg, "TOCK_TOKEN": "other"}, "", "jobs", "get", "x")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "unknown token", "TOCK_TOKEN wins over the file")
}

// A refused token's error says where the token came from and what to do.
func TestRefusedTokenSaysWhereItCameFrom(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		w.Write([]byte(`{"error":{"code":"unauthorized","message":"unknown token"}}`))
	}))
	defer srv.Close()
	home := t.TempDir()

	_, errOut, code := invoke(t, map[string]string{"HOME": home, "TOCK_URL": srv.URL, "TOCK_TOKEN": "stale"}, "", "jobs", "list")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "unknown token")
	require.Contains(t, errOut, "the token came from TOCK_TOKEN; run tock login")
	require.NotContains(t, errOut, "stale")

	_, errOut, _ = invoke(t, map[string]string{"HOME": home, "TOCK_URL": srv.URL}, "", "jobs", "list", "--token", "stale")
	require.Contains(t, errOut, "the token came from the --token flag")

	xdg := filepath.Join(home, "xdg")
	require.NoError(t, saveConfig(filepath.Join(xdg, "tock", "config.json"), config{URL: srv.URL, Token: "stale"}))
	_, errOut, _ = invoke(t, map[string]string{"XDG_CONFIG_HOME": xdg}, "", "jobs", "list")
	require.Contains(t, errOut, "the token came from "+filepath.Join(xdg, "tock", "config.json")+", saved by tock login")
}
