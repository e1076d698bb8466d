package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// config is what tock login keeps: where the dashboard is and the token to
// show it.
type config struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// configPath is $XDG_CONFIG_HOME/tock/config.json, or
// ~/.config/tock/config.json without it.
func configPath(getenv func(string) string) (string, error) {
	if dir := getenv("XDG_CONFIG_HOME"); dir != "" {
		return filepath.Join(dir, "tock", "config.json"), nil
	}
	home := getenv("HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("find the config directory: %w", err)
		}
	}
	return filepath.Join(home, ".config", "tock", "config.json"), nil
}

// loadConfig reads the config file; a missing one is an empty config.
func loadConfig(file string) (config, error) {
	var c config
	b, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("read config: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("read config %s: %w", file, err)
	}
	return c, nil
}

// saveConfig writes c to file, readable by its owner only (0600, in a 0700
// directory), since the token is a credential. It writes a temporary file
// and renames it, so a crash leaves the old config or the new one.
func saveConfig(file string, c config) error {
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	// MkdirAll leaves an existing directory's mode alone.
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("restrict %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".config-*.json")
	if err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("write config: %w", err)
	}
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write config: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return fmt.Errorf("write config: %w", err)
	}
	return nil
}
