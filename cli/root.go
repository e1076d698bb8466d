package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/spf13/cobra"

	tock "github.com/tockhq/tock/sdk/go"
)

// The exit codes: scripts tell a usage mistake and a missing resource from
// any other failure.
const (
	exitOK       = 0
	exitError    = 1
	exitUsage    = 2
	exitNotFound = 3
)

// usageError is a mistake in the command line: bad flags or arguments.
type usageError struct{ error }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// app is one invocation: its streams, environment and global flags.
type app struct {
	in     io.Reader
	out    io.Writer
	errOut io.Writer
	getenv func(string) string

	output string // table or json
	url    string
	token  string
	// tokenFrom says where the token client used came from (the --token
	// flag, TOCK_TOKEN or the config file), for a refused token's message.
	tokenFrom string
}

// run executes the command line args and returns the exit code.
func run(ctx context.Context, args []string, in io.Reader, out, errOut io.Writer) int {
	a := &app{in: in, out: out, errOut: errOut, getenv: os.Getenv}
	root := a.rootCmd()
	root.SetArgs(args)
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	return a.exit(root.ExecuteContext(ctx))
}

// exit reports err, if any, and returns the exit code it calls for.
func (a *app) exit(err error) int {
	if err == nil {
		return exitOK
	}
	a.printError(err)
	var ue usageError
	switch {
	case errors.As(err, &ue):
		return exitUsage
	case tock.IsNotFound(err):
		return exitNotFound
	}
	return exitError
}

// printError writes err for a person: the API's message and, when the API
// names one, the field at fault.
func (a *app) printError(err error) {
	var e *tock.Error
	if !errors.As(err, &e) {
		fmt.Fprintln(a.errOut, "error:", err)
		var ue usageError
		if errors.As(err, &ue) {
			fmt.Fprintln(a.errOut, "run with --help for usage")
		}
		return
	}
	msg := e.Message
	if msg == "" {
		msg = fmt.Sprintf("HTTP %d", e.Status)
	}
	// What the command was doing, when it wrapped the API's error.
	msg = strings.TrimSuffix(err.Error(), e.Error()) + msg
	fmt.Fprintf(a.errOut, "error: %s", msg)
	if e.Code != "" {
		fmt.Fprintf(a.errOut, " (%s)", e.Code)
	}
	fmt.Fprintln(a.errOut)
	if e.Field != "" {
		fmt.Fprintf(a.errOut, "field: %s\n", e.Field)
	}
	if e.Status == http.StatusUnauthorized && a.tokenFrom != "" {
		fmt.Fprintf(a.errOut, "the token came from %s; run tock login to save one that works, or set TOCK_TOKEN\n", a.tokenFrom)
	}
	for _, it := range e.Items {
		fmt.Fprintf(a.errOut, "  job %d: %s", it.Index, it.Message)
		if it.Field != "" {
			fmt.Fprintf(a.errOut, " (field %s)", it.Field)
		}
		fmt.Fprintln(a.errOut)
	}
}

func (a *app) rootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "tock",
		Short: "Manage tock jobs, runs and schedules as code",
		Long: `tock talks to a tock dashboard's API.

It finds the dashboard and token in --url and --token, else in TOCK_URL and
TOCK_TOKEN, else in the file tock login writes
($XDG_CONFIG_HOME/tock/config.json or ~/.config/tock/config.json).

Exit codes: 0 ok, 1 error, 2 bad flags or arguments, 3 not found.`,
		Version:       version,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          noArgs,
		RunE:          func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	pf := root.PersistentFlags()
	pf.StringVarP(&a.output, "output", "o", "table", "output format: table or json")
	pf.StringVar(&a.url, "url", "", "dashboard URL (default $TOCK_URL, then the config file)")
	pf.StringVar(&a.token, "token", "", "API key or admin token (default $TOCK_TOKEN, then the config file)")
	root.PersistentPreRunE = func(*cobra.Command, []string) error {
		if a.output != "table" && a.output != "json" {
			return usagef("--output must be table or json, not %q", a.output)
		}
		return nil
	}
	root.AddCommand(a.loginCmd(), a.jobsCmd(), a.runsCmd(), a.deadLettersCmd(), a.flowsCmd(), a.backfillsCmd(), a.calendarsCmd(), a.previewCmd(), a.applyCmd(), a.listenCmd())
	return root
}

// group is a command that only holds others: run bare, it shows its help.
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		Args:  noArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	c.AddCommand(subs...)
	return c
}

// noArgs refuses arguments, naming an unknown subcommand as such.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		if cmd.HasSubCommands() {
			return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
		}
		return usagef("%s takes no arguments", cmd.CommandPath())
	}
	return nil
}

// exactArgs wants n arguments, named in the usage line.
func exactArgs(n int) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s wants %d argument(s), got %d: %s", cmd.CommandPath(), n, len(args), cmd.UseLine())
		}
		return nil
	}
}

// client builds the API client from the flags, the environment and the
// config file, in that order of precedence.
func (a *app) client() (*tock.Client, error) {
	url, token := a.url, a.token
	a.tokenFrom = "the --token flag"
	if url == "" || token == "" {
		file, err := configPath(a.getenv)
		if err != nil {
			return nil, err
		}
		cfg, err := loadConfig(file)
		if err != nil {
			return nil, err
		}
		url = first(url, a.getenv("TOCK_URL"), cfg.URL)
		// The saved token goes only to the dashboard it was saved for: a
		// --url or TOCK_URL naming another one needs its own token.
		saved := ""
		if strings.TrimSuffix(url, "/") == strings.TrimSuffix(cfg.URL, "/") {
			saved = cfg.Token
		}
		token = first(token, a.getenv("TOCK_TOKEN"), saved)
		switch {
		case a.token != "":
		case a.getenv("TOCK_TOKEN") != "":
			a.tokenFrom = "TOCK_TOKEN"
		default:
			a.tokenFrom = file + ", saved by tock login"
		}
	}
	if url == "" || token == "" {
		return nil, errors.New("no dashboard to talk to: run tock login, or set TOCK_URL and TOCK_TOKEN")
	}
	return tock.New(url, token, tock.WithUserAgent("tock-cli/"+version)), nil
}

// first returns the first non-empty string.
func first(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}
