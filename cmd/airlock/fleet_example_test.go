//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	workerfile "github.com/airlock-dev/airlock/worker"
)

// The fleet example and the operators' guide, whose airlock command lines
// these tests run through airlock's own flag parsers: a flag renamed or
// gone fails here, not in an operator's terminal.
const (
	fleetDir   = "../../examples/fleet"
	fleetGuide = "../../docs/fleet.md"
)

// composeFile is what the tests read of compose.yaml.
type composeFile struct {
	Services map[string]struct {
		Command []string `yaml:"command"`
		Image   string   `yaml:"image"`
		Build   *struct {
			Context    string `yaml:"context"`
			Dockerfile string `yaml:"dockerfile"`
		} `yaml:"build"`
		Volumes []string `yaml:"volumes"`
	} `yaml:"services"`
}

func readCompose(t *testing.T) composeFile {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fleetDir, "compose.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c composeFile
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	return c
}

// TestFleetComposeCommandsParse runs every airlock command line of
// compose.yaml through airlock's flag parsers, and checks that the files
// it mounts and builds from are there.
func TestFleetComposeCommandsParse(t *testing.T) {
	c := readCompose(t)
	var lines [][]string
	for name, s := range c.Services {
		for _, v := range s.Volumes {
			if src, _, _ := strings.Cut(v, ":"); strings.HasPrefix(src, "./") {
				if _, err := os.Stat(filepath.Join(fleetDir, src)); err != nil {
					t.Errorf("service %s mounts %s: %v", name, src, err)
				}
			}
		}
		if b := s.Build; b != nil {
			if _, err := os.Stat(filepath.Join(fleetDir, b.Context, b.Dockerfile)); err != nil {
				t.Errorf("service %s builds from %s: %v", name, b.Dockerfile, err)
			}
		}
		if len(s.Command) > 1 && s.Command[0] == "airlock" {
			lines = append(lines, s.Command[1:])
		}
	}
	serves := 0
	for _, l := range lines {
		if len(l) > 0 && l[0] == "serve" {
			serves++
		}
	}
	if serves < 2 {
		t.Fatalf("compose.yaml runs %d airlock servers; a fleet has two or more", serves)
	}
	checkCommandLines(t, "compose.yaml", lines)
}

// TestFleetGuideCommandsParse does the same for every line of the
// guide's (and the example's README's) shell blocks that runs airlock (alone, after VAR=value
// assignments, or inside docker compose run or exec).
func TestFleetGuideCommandsParse(t *testing.T) {
	for _, c := range []struct {
		file string
		min  int // lines at least: serve, review, ledger verify and show, prune
	}{{fleetGuide, 5}, {filepath.Join(fleetDir, "README.md"), 1}} {
		b, err := os.ReadFile(c.file)
		if err != nil {
			t.Fatal(err)
		}
		lines := airlockLines(string(b))
		if len(lines) < c.min {
			t.Fatalf("%s shows %d airlock command lines, fewer than %d", c.file, len(lines), c.min)
		}
		checkCommandLines(t, c.file, lines)
	}
}

// airlockLines finds the airlock command lines in a Markdown text's shell
// blocks (sh, bash, shell, console; other blocks are files): a line (continued by a trailing backslash) is split into words
// as the shell would for plain words and quotes, a trailing comment left
// out, and its words from the first "airlock" on are the command. In a
// console block only the lines after a "$ " prompt are commands.
func airlockLines(md string) [][]string {
	var out [][]string
	in, shell, console := false, false, false
	var cont string
	for _, line := range strings.Split(md, "\n") {
		if fence, ok := strings.CutPrefix(strings.TrimSpace(line), "```"); ok {
			in, cont = !in, ""
			shell, console = slices.Contains([]string{"sh", "bash", "shell", "console"}, fence), fence == "console"
			continue
		}
		if !in || !shell {
			continue
		}
		if console && cont == "" {
			cmd, ok := strings.CutPrefix(strings.TrimSpace(line), "$ ")
			if !ok {
				continue
			}
			line = cmd
		}
		if strings.HasSuffix(line, "\\") {
			cont += strings.TrimSuffix(line, "\\") + " "
			continue
		}
		line, cont = cont+line, ""
		words := shellWords(strings.TrimSpace(line))
		if i := slices.Index(words, "airlock"); i >= 0 && i+1 < len(words) {
			out = append(out, words[i+1:])
		}
	}
	return out
}

// shellWords splits a line into words: blanks separate them, single and
// double quotes group, a word starting with # ends the line.
func shellWords(line string) []string {
	var words []string
	var w strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words, inWord = append(words, w.String()), false
				w.Reset()
			}
		case r == '#' && !inWord:
			return words
		default:
			w.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	return words
}

// checkCommandLines parses each line (airlock's arguments) with the
// command's own flags: serve with parseServe, which also checks what the
// flags say together, and the checks of --run's flags after it; the others with -h added, which their parsers take
// only once every flag before it is known and well formed.
func checkCommandLines(t *testing.T, where string, lines [][]string) {
	t.Helper()
	t.Setenv("AIRLOCK_STATE_DIR", t.TempDir())
	t.Setenv("AIRLOCK_RUNTIME_DIR", t.TempDir())
	files := map[string]bool{"nats-creds": true, "nats-ca": true, "nats-cert": true, "nats-key": true}
	stand := filepath.Join(t.TempDir(), "stand-in")
	if err := os.WriteFile(stand, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range lines {
		// The files these flags name are on the operator's machine.
		line := strings.Join(args, " ")
		args = slices.Clone(args)
		for i := 0; i+1 < len(args); i++ {
			if files[strings.TrimLeft(args[i], "-")] {
				args[i+1] = stand
			}
		}
		if err := parseLine(args); err != nil {
			t.Errorf("%s: airlock %s: %v", where, line, err)
		}
	}
}

// parseLine parses args as airlock would, without running the command.
func parseLine(args []string) error {
	if args[0] == "serve" {
		f, err := parseServe(args[1:], &bytes.Buffer{})
		if err != nil {
			return err
		}
		// What serve checks next, before it reads the worker.
		if _, err := runOptions(f.runMode, f.runRO, f.runEnvs, f.runTimeout, f.allowSensitive); err != nil {
			return err
		}
		_, err = parseCacheSize(f.runCacheSize)
		return err
	}
	var stderr bytes.Buffer
	if code := run(append(slices.Clone(args), "-h"), nil, &bytes.Buffer{}, &stderr); code != exitOK {
		msg := strings.TrimSpace(stderr.String())
		msg, _, _ = strings.Cut(msg, "\n")
		return errors.New(msg)
	}
	return nil
}

// TestFleetWorkerFitsItsRepository runs compose.yaml's repo-init script
// (with the shared volume's path made a temporary directory) and checks
// the example's worker file against the repository it made, as airlock
// serve does at start: the bare repository, its main branch.
func TestFleetWorkerFitsItsRepository(t *testing.T) {
	requireGit(t)
	c := readCompose(t)
	init := c.Services["repo-init"].Command
	if len(init) != 3 || init[0] != "sh" {
		t.Fatalf("repo-init's command is %q; want sh -euc SCRIPT", init)
	}
	root := t.TempDir()
	vol := filepath.Join(root, "srv-git")
	script := strings.NewReplacer("/srv/git", vol, "/tmp/seed", filepath.Join(root, "seed")).Replace(init[2])
	env := isolatedEnv(t, root)
	for range 2 { // a second start finds the repository made
		cmd := exec.Command("sh", "-euc", script)
		cmd.Env = env
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("repo-init: %v\n%s", err, out)
		}
	}
	b, err := os.ReadFile(filepath.Join(fleetDir, "worker.md"))
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(root, "worker.md")
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(b), "/srv/git", vol)), 0o600); err != nil {
		t.Fatal(err)
	}
	w, err := workerfile.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Check(); err != nil {
		t.Fatal(err)
	}
}
