package config

import (
	"fmt"
	"os"

	"github.com/tockhq/tock/pkg/secretbox"
)

// ReadSecrets reads the operator key that seals users' signing secrets at
// rest: TOCK_SECRET_KEY (32 bytes, base64), or TOCK_SECRET_KEY_FILE naming a
// file that holds it (a mounted secret, ECS's from Secrets Manager), and
// TOCK_SECRET_KEY_PREVIOUS, comma-separated earlier keys that still open what
// they sealed while the operator key is rotated. No key gives a box that
// stores secrets as they are. No error names a key's value.
func ReadSecrets(e *Env) *secretbox.Box {
	text := e.String("TOCK_SECRET_KEY", "")
	if file := e.String("TOCK_SECRET_KEY_FILE", ""); file != "" {
		if text != "" {
			e.Check(fmt.Errorf("TOCK_SECRET_KEY and TOCK_SECRET_KEY_FILE are both set; set one"))
		}
		b, err := os.ReadFile(file)
		if err != nil {
			e.Check(fmt.Errorf("TOCK_SECRET_KEY_FILE: %w", err))
		}
		text = string(b)
	}
	var current []byte
	if text != "" {
		k, err := secretbox.ParseKey(text)
		if err != nil {
			e.Check(fmt.Errorf("TOCK_SECRET_KEY: %w", err))
		}
		current = k
	}
	var previous [][]byte
	for i, v := range e.List("TOCK_SECRET_KEY_PREVIOUS") {
		k, err := secretbox.ParseKey(v)
		if err != nil {
			e.Check(fmt.Errorf("TOCK_SECRET_KEY_PREVIOUS, key %d: %w", i+1, err))
			continue
		}
		previous = append(previous, k)
	}
	box, err := secretbox.New(current, previous...)
	if err != nil {
		e.Check(fmt.Errorf("TOCK_SECRET_KEY: %w", err))
		box, _ = secretbox.New(nil)
	}
	return box
}
