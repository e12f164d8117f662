package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/approval/broker"
	"github.com/airlock-dev/airlock/session/store"
)

// newToken is a new random bearer token.
func newToken() (string, error) {
	var b [32]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	return hex.EncodeToString(b[:]), nil
}

// writeHTTPToken writes the server's bearer token, mode 0600, to a file
// in dir (the private socket directory), for clients configured from a
// file.
func writeHTTPToken(dir, token string) (file string, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	// A killed server's token file stays behind: the next one removes
	// those of servers that are gone.
	stale, _ := filepath.Glob(filepath.Join(dir, "http-*.token"))
	for _, f := range stale {
		var pid int
		if _, err := fmt.Sscanf(filepath.Base(f), "http-%d.token", &pid); err == nil && pid > 0 && !broker.Alive(pid) {
			_ = os.Remove(f) // another server may have swept it first
		}
	}
	file = filepath.Join(dir, fmt.Sprintf("http-%d.token", os.Getpid()))
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		return "", err
	}
	return file, nil
}

// envHTTPToken, when set, is the server's bearer token: an operator gives
// every server of a fleet the same from a secret store.
const envHTTPToken = "AIRLOCK_HTTP_TOKEN"

// sharer is a store that keeps values the fleet shares (natsstore).
type sharer interface {
	Shared(name string, fresh func() (string, error)) (string, error)
}

// serverToken is the bearer token that opens new sessions: the
// environment's AIRLOCK_HTTP_TOKEN; else in a fleet the one its servers
// share (the first made it), so that a load balancer may send a new
// client to any of them; else a new one.
func (sv *served) serverToken(st store.Store) (string, error) {
	if t, ok := os.LookupEnv(envHTTPToken); ok {
		if len(t) < 32 || strings.IndexFunc(t, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0 {
			return "", usageError("%s: give at least 32 printable ASCII characters, no spaces (e.g. the output of openssl rand -hex 32)", envHTTPToken)
		}
		return t, nil
	}
	if sh, ok := st.(sharer); ok {
		return sh.Shared("http-token", newToken)
	}
	return newToken()
}
