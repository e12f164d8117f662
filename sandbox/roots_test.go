package sandbox_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/airlock-dev/airlock/sandbox"
)

func TestCheckReadOnly(t *testing.T) {
	home := t.TempDir()
	state := t.TempDir()
	for _, d := range []string{".ssh", "go/pkg/mod", ".config/gh", ".config/other"} {
		os.MkdirAll(filepath.Join(home, d), 0o700)
	}
	os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(home, "go", "innocent"))
	tests := []struct {
		path string
		ok   bool
	}{
		{filepath.Join(home, "go/pkg/mod"), true},
		{filepath.Join(home, ".config/other"), true},
		{home, false},
		{"/", false},
		{filepath.Join(home, ".ssh"), false},
		{filepath.Join(home, ".config"), false},              // holds .config/gh
		{filepath.Join(home, "go", "innocent"), false},       // a symlink to .ssh
		{filepath.Join(home, ".config/gh/hosts.yml"), false}, // missing, and inside .config/gh
		{state, false},
	}
	for _, tt := range tests {
		_, err := sandbox.CheckReadOnly(tt.path, home, state)
		if (err == nil) != tt.ok {
			t.Errorf("CheckReadOnly(%s) = %v, want ok %v", tt.path, err, tt.ok)
		}
		if err != nil && tt.ok == false && tt.path != filepath.Join(home, ".config/gh/hosts.yml") && !errors.Is(err, sandbox.ErrSensitive) {
			t.Errorf("CheckReadOnly(%s) = %v, want ErrSensitive", tt.path, err)
		}
	}
}
