package main

import (
	"bufio"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	tock "github.com/tockhq/tock/sdk/go"
)

func (a *app) loginCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "login [--url URL] [--token TOKEN]",
		Short: "Check a dashboard URL and token, and keep them in the config file",
		Long: `login asks for what --url and --token do not give, checks them against the
dashboard (GET /api/v1/me) and writes them to $XDG_CONFIG_HOME/tock/config.json
(or ~/.config/tock/config.json), readable by you only. TOCK_URL and TOCK_TOKEN
override the file.`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			lines := bufio.NewScanner(a.in)
			ask := func(prompt string) (string, error) {
				fmt.Fprint(a.errOut, prompt)
				if !lines.Scan() {
					if err := lines.Err(); err != nil {
						return "", err
					}
					return "", usagef("no answer to %q", strings.TrimSpace(prompt))
				}
				return strings.TrimSpace(lines.Text()), nil
			}
			cfg := config{URL: a.url, Token: a.token}
			var err error
			if cfg.URL == "" {
				if cfg.URL, err = ask("Dashboard URL: "); err != nil {
					return err
				}
			}
			if cfg.Token == "" {
				if f, ok := a.in.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
					// Typed at a terminal, the token is not echoed, so it
					// stays out of the screen and its scrollback.
					fmt.Fprint(a.errOut, "Token: ")
					b, rerr := term.ReadPassword(int(f.Fd()))
					fmt.Fprintln(a.errOut)
					if rerr != nil {
						return rerr
					}
					cfg.Token = strings.TrimSpace(string(b))
				} else if cfg.Token, err = ask("Token: "); err != nil {
					return err
				}
			}
			if cfg.URL == "" || cfg.Token == "" {
				return usagef("login needs a URL and a token")
			}
			me, err := tock.New(cfg.URL, cfg.Token, tock.WithUserAgent("tock-cli/"+version)).Me(cmd.Context())
			if err != nil {
				return fmt.Errorf("check the token: %w", err)
			}
			file, err := configPath(a.getenv)
			if err != nil {
				return err
			}
			if err := saveConfig(file, cfg); err != nil {
				return err
			}
			fmt.Fprintf(a.out, "logged in to %s as %s (%s); saved in %s\n", cfg.URL, me.Name, me.Role, file)
			return nil
		},
	}
}
