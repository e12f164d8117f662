package session_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/airlock-dev/airlock/session"
	"github.com/airlock-dev/airlock/targets"
)

// No target is opened under Session.mu: a pull whose target is slow to
// open (GitHub over the network, a local one recovering a push) holds up
// no other call of the session, and the pull goes on when it opens.
func TestOpenTargetNotUnderLock(t *testing.T) {
	main := repo(t, false, map[string]string{"a.txt": "a\n"})
	other := repo(t, true, map[string]string{"b.txt": "b\n"})
	entered, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	e := newEnv(t, main, config{targets: map[string]string{"other": other}, wrap: func(tg targets.Target) targets.Target {
		if strings.HasPrefix(tg.ID(), "local-bare:") {
			once.Do(func() { close(entered) })
			<-release
		}
		return tg
	}})
	pulled := make(chan error, 1)
	go func() {
		_, err := e.s.Pull(context.Background(), "other", []string{"b.txt"}, "")
		pulled <- err
	}()
	<-entered
	status := make(chan session.Status, 1)
	go func() { status <- e.s.Status() }()
	select {
	case st := <-status:
		if st.Branch != "main" {
			t.Errorf("status while the target opened: branch %q, want main", st.Branch)
		}
	case <-time.After(10 * time.Second):
		t.Error("Status waited for a target being opened: it was opened under Session.mu")
	}
	close(release)
	if err := <-pulled; err != nil {
		t.Fatal(err)
	}
	if b, err := e.s.Workspace().ReadFile("b.txt"); err != nil || string(b) != "b\n" {
		t.Errorf("the pull brought b.txt as %q, %v", b, err)
	}
}
