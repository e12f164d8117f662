package main

import (
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/airlock-dev/airlock/internal/natsconn"
	"github.com/airlock-dev/airlock/internal/reviewkey"
)

// trustFlags are serve's flags of whom it trusts: the reviewers' keys
// that may decide its pushes, and a NATS without credentials.
type trustFlags struct {
	reviewerKeys multiFlag
	insecureNATS bool
}

func (t *trustFlags) register(fs *flag.FlagSet) {
	fs.Var(&t.reviewerKeys, "reviewer-key", "a reviewer's public key (U…, as airlock review --print-key shows it), or a file of them\n"+
		"(one a line); repeatable. Only decisions signed by these keys are applied. Default: the key of\n"+
		"this machine's reviewer, in the state directory's "+reviewkey.FileName+" (made if missing); with --store, required")
	fs.BoolVar(&t.insecureNATS, "insecure-nats", false, "with --store: connect to a NATS that lets anyone in without credentials (a test, or a NATS\n"+
		"only this machine reaches); without it, such a NATS is refused: its users could read every push")
}

// check is the flags' usage error, if any.
func (t *trustFlags) check(fleet bool) error {
	if t.insecureNATS && !fleet {
		return usageError("--insecure-nats is for a NATS store: add --store nats://HOST:PORT, or drop it")
	}
	if fleet && len(t.reviewerKeys) == 0 {
		return usageError("airlock serve --store needs --reviewer-key: the public key of each reviewer whose decisions this server\n" +
			"applies (each reviewer prints theirs with `airlock review --print-key`); give a key or a file of keys,\n" +
			"and repeat the flag for more")
	}
	return nil
}

// trustedKeys are the reviewers' keys this server accepts decisions from:
// --reviewer-key's, or this machine's reviewer's (made if missing, so that
// airlock serve and airlock review on one machine work with no setup).
// The start line says which.
func (sv *served) trustedKeys() ([]string, error) {
	if len(sv.f.trust.reviewerKeys) > 0 {
		keys, err := reviewkey.Trusted(sv.f.trust.reviewerKeys)
		if err != nil {
			return nil, usageError("%v", err)
		}
		if len(keys) == 0 {
			return nil, usageError("--reviewer-key %s holds no key, so no decision could be applied: add each reviewer's public key\n"+
				"(airlock review --print-key prints it), one a line", strings.Join(sv.f.trust.reviewerKeys, " "))
		}
		fmt.Fprintf(sv.stderr, "airlock serve: applies decisions signed by the reviewer keys %s\n", strings.Join(keys, ", "))
		return keys, nil
	}
	path := filepath.Join(sv.state, reviewkey.FileName)
	kp, created, err := reviewkey.LoadOrCreate(path)
	if err != nil {
		return nil, fmt.Errorf("the reviewer's key this server trusts by default: %w; or give --reviewer-key", err)
	}
	made := ""
	if created {
		made = ", made now"
	}
	fmt.Fprintf(sv.stderr, "airlock serve: applies decisions signed by this machine's reviewer key %s (%s%s; --reviewer-key names others)\n",
		reviewkey.Public(kp), path, made)
	return []string{reviewkey.Public(kp)}, nil
}

// checkNATS refuses a NATS this server reached without credentials, unless
// --insecure-nats: anyone who reaches it could read every push (secrets a
// diff holds included) and write the queue (signed decisions keep them
// from deciding, not from hiding requests or forging sessions).
func (t *trustFlags) checkNATS(o *natsconn.Options, stderr io.Writer) error {
	how := "let this server in without credentials"
	if o.HasCredentials() {
		if !o.OpenToAnyone() {
			return nil
		}
		// A NATS without authorization takes any credentials.
		how = "lets in a client without credentials (this server's own are not asked for)"
	}
	if t.insecureNATS {
		fmt.Fprintf(stderr, "airlock serve: warning: NATS at %s %s (--insecure-nats): anyone who reaches it reads every push and can write the fleet's state\n", o.Where(), how)
		return nil
	}
	return usageError("NATS at %s %s: anyone who reaches it could read every push and\n"+
		"write the fleet's state. Give NATS users (docs/fleet.md: one for servers, one for reviewers) and connect with\n"+
		"--nats-creds FILE, %s and %s, or %s; or, if you mean it (a test, a NATS only\n"+
		"this machine reaches), pass --insecure-nats", o.Where(), how, natsconn.EnvUser, natsconn.EnvPassword, natsconn.EnvToken)
}
