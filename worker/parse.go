package worker

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/bytesize"
	"github.com/airlock-dev/airlock/internal/pathguard"
	"github.com/airlock-dev/airlock/targets"
	// The github kind registers itself (targets.Register): every
	// program that parses a worker file knows it.
	_ "github.com/airlock-dev/airlock/targets/github"
	"go.yaml.in/yaml/v3"
)

// maxWorkerFile bounds a worker file.
const maxWorkerFile = 1 << 20

// Load reads and checks a worker file.
func Load(path string) (*Worker, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxWorkerFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxWorkerFile {
		return nil, &ConfigError{File: path, Msg: fmt.Sprintf("the file is larger than %d bytes; a worker file is a short Markdown file", maxWorkerFile)}
	}
	abs, _ := filepath.Abs(path)
	return Parse(abs, data)
}

// Parse parses a worker file's content. file names it in errors and
// anchors relative paths (its directory).
func Parse(file string, data []byte) (*Worker, error) {
	p := &parser{file: file, dir: filepath.Dir(file), specs: map[*TargetSpec]RepoRef{}}
	front, body, offset, err := splitFrontmatter(data)
	if err != nil {
		return nil, &ConfigError{File: file, Line: 1, Column: 1, Msg: err.Error()}
	}
	p.offset = offset
	var doc yaml.Node
	if err := yaml.Unmarshal(front, &doc); err != nil {
		return nil, p.yamlError(err)
	}
	if len(doc.Content) == 0 {
		return nil, &ConfigError{File: file, Line: 1, Column: 1, Msg: "the frontmatter is empty; it needs at least name and git.default_target"}
	}
	sum := sha256.Sum256(data)
	w := &Worker{File: file, Instructions: strings.TrimSpace(string(body)), Digest: hex.EncodeToString(sum[:])}
	if err := p.worker(doc.Content[0], w); err != nil {
		return nil, err
	}
	w.Refs = p.refs
	return w, nil
}

// splitFrontmatter cuts "---\n...\n---\n" off the top.
func splitFrontmatter(data []byte) (front, body []byte, offset int, err error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	s := string(data)
	if !strings.HasPrefix(s, "---\n") && !strings.HasPrefix(s, "---\r\n") {
		return nil, nil, 0, errors.New(`a worker file starts with YAML frontmatter between two "---" lines`)
	}
	rest := s[strings.Index(s, "\n")+1:]
	for i, line := range strings.SplitAfter(rest, "\n") {
		if strings.TrimRight(line, "\r\n") == "---" {
			lines := strings.SplitAfter(rest, "\n")
			front := strings.Join(lines[:i], "")
			body := strings.Join(lines[i+1:], "")
			return []byte(front), []byte(body), 1, nil
		}
	}
	return nil, nil, 0, errors.New(`the frontmatter has no closing "---" line`)
}

type parser struct {
	file   string
	dir    string
	offset int // lines before the YAML starts
	// where each target spec was written, and the refs in file order
	specs map[*TargetSpec]RepoRef
	refs  []RepoRef
}

func (p *parser) pos(n *yaml.Node) Pos { return Pos{n.Line + p.offset, n.Column} }

// ref records that key names spec's repository; at is the node that names
// it when the spec was written elsewhere (an auto_pull source naming a
// target), nil when it was written here.
func (p *parser) ref(key string, spec *TargetSpec, pull bool, at *yaml.Node) {
	r := p.specs[spec]
	r.Key, r.Spec, r.Pull = key, spec, pull
	if at != nil {
		r = RepoRef{Key: key, Spec: spec, Pull: pull, At: p.pos(at)}
	}
	p.refs = append(p.refs, r)
}

func (p *parser) errAt(n *yaml.Node, key, format string, args ...any) error {
	return &ConfigError{File: p.file, Line: n.Line + p.offset, Column: n.Column, Key: key, Msg: fmt.Sprintf(format, args...)}
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

func (p *parser) yamlError(err error) error {
	msg := err.Error()
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ := strconv.Atoi(m[1])
		return &ConfigError{File: p.file, Line: line + p.offset, Column: 1, Msg: "YAML: " + m[2]}
	}
	return &ConfigError{File: p.file, Msg: "YAML: " + strings.TrimPrefix(msg, "yaml: ")}
}

// fields checks that n is a mapping with only the known keys, and returns
// key -> (key node, value node).
func (p *parser) fields(n *yaml.Node, key string, known ...string) (map[string][2]*yaml.Node, error) {
	if n.Kind != yaml.MappingNode {
		return nil, p.errAt(n, key, "must be a mapping (key: value lines), not %s", kindName(n))
	}
	out := map[string][2]*yaml.Node{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		full := joinKey(key, k.Value)
		if !contains(known, k.Value) {
			return nil, p.errAt(k, full, "unknown key; the keys here are %s", strings.Join(known, ", "))
		}
		if _, dup := out[k.Value]; dup {
			return nil, p.errAt(k, full, "given twice")
		}
		out[k.Value] = [2]*yaml.Node{k, v}
	}
	return out, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func joinKey(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "empty"
		}
		return fmt.Sprintf("%q", n.Value)
	case yaml.AliasNode:
		return "an alias"
	}
	return "something else"
}

func (p *parser) str(n *yaml.Node, key string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" || n.Tag == "!!map" || n.Tag == "!!seq" {
		return "", p.errAt(n, key, "must be a string, not %s", kindName(n))
	}
	return n.Value, nil
}

var nameRe = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

func (p *parser) worker(n *yaml.Node, w *Worker) error {
	f, err := p.fields(n, "", "name", "description", "author", "git", "repos", "sandbox", "protect")
	if err != nil {
		return err
	}
	nameNode, ok := f["name"]
	if !ok {
		return p.errAt(n, "name", "missing; every worker needs a name, e.g. name: report-writer")
	}
	if w.Name, err = p.str(nameNode[1], "name"); err != nil {
		return err
	}
	if !nameRe.MatchString(w.Name) {
		return p.errAt(nameNode[1], "name", "%q is not a worker name: use lowercase letters, digits, \".\", \"_\" and \"-\", at most 64", w.Name)
	}
	if d, ok := f["description"]; ok {
		if w.Description, err = p.str(d[1], "description"); err != nil {
			return err
		}
	}
	w.Author = Person{Name: w.Name, Email: w.Name + "@airlock.invalid"}
	if a, ok := f["author"]; ok {
		if w.Author, err = p.person(a[1], "author"); err != nil {
			return err
		}
	}
	g, ok := f["git"]
	r, multi := f["repos"]
	switch {
	case ok && multi:
		return p.errAt(r[0], "repos", "a worker has either git (one repository) or repos (several), not both; move git's keys under a name in repos")
	case multi:
		if err := p.repos(r[1], w); err != nil {
			return err
		}
	case !ok:
		return p.errAt(n, "git", "missing; say where pushes go, e.g. git: { default_target: { type: local, path: . } }, or name several repositories under repos")
	default:
		rc, err := p.git(g[1], "git")
		if err != nil {
			return err
		}
		w.DefaultTarget, w.Targets, w.AutoPull = rc.DefaultTarget, rc.Targets, rc.AutoPull
	}
	if s, ok := f["sandbox"]; ok {
		if err := p.sandbox(s[1], w); err != nil {
			return err
		}
	}
	if pr, ok := f["protect"]; ok {
		if err := p.protect(pr[1], w); err != nil {
			return err
		}
	}
	return nil
}

// protect reads the protect list: branches a push to asks the reviewer
// for an explicit yes.
func (p *parser) protect(n *yaml.Node, w *Worker) error {
	if n.Kind != yaml.SequenceNode {
		return p.errAt(n, "protect", "must be a list of branches or patterns, e.g. [main, \"release/*\"], not %s", kindName(n))
	}
	for i, item := range n.Content {
		key := fmt.Sprintf("protect[%d]", i)
		pat, err := p.str(item, key)
		if err != nil {
			return err
		}
		if err := approval.CheckProtect(pat); err != nil {
			return p.errAt(item, key, "%v", err)
		}
		w.Protect = append(w.Protect, pat)
	}
	return nil
}

func (p *parser) person(n *yaml.Node, key string) (Person, error) {
	f, err := p.fields(n, key, "name", "email")
	if err != nil {
		return Person{}, err
	}
	var out Person
	for _, k := range []string{"name", "email"} {
		v, ok := f[k]
		if !ok {
			return Person{}, p.errAt(n, joinKey(key, k), "missing")
		}
		s, err := p.str(v[1], joinKey(key, k))
		if err != nil {
			return Person{}, err
		}
		if strings.TrimSpace(s) == "" || strings.ContainsAny(s, "<>\n\r\x00") {
			return Person{}, p.errAt(v[1], joinKey(key, k), "%q cannot go into a git commit (empty, or has <, > or a line break)", s)
		}
		if k == "name" {
			out.Name = s
		} else {
			out.Email = s
		}
	}
	return out, nil
}

// maxRepos bounds a worker's repositories.
const maxRepos = 64

// repos reads the repos mapping: names to what git holds for one
// repository.
func (p *parser) repos(n *yaml.Node, w *Worker) error {
	if n.Kind != yaml.MappingNode {
		return p.errAt(n, "repos", "must be a mapping of repository names to { default_target, targets, auto_pull }, not %s", kindName(n))
	}
	if len(n.Content) == 0 {
		return p.errAt(n, "repos", "names no repository; give at least one, e.g. repos: { api: { default_target: { type: local, path: ./api } } }")
	}
	if len(n.Content)/2 > maxRepos {
		return p.errAt(n, "repos", "names %d repositories; at most %d", len(n.Content)/2, maxRepos)
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		key := "repos." + k.Value
		if !nameRe.MatchString(k.Value) || k.Value == "default" {
			return p.errAt(k, key, "%q is not a repository name: use lowercase letters, digits, \".\", \"_\" and \"-\" (it is also the repository's directory in the workspace)", k.Value)
		}
		if _, err := pathguard.CheckPath(k.Value); err != nil {
			return p.errAt(k, key, "%q cannot be a directory of the workspace: %v", k.Value, err)
		}
		for _, r := range w.Repos {
			if r.Name == k.Value {
				return p.errAt(k, key, "given twice")
			}
		}
		rc, err := p.git(v, key)
		if err != nil {
			return err
		}
		rc.Name = k.Value
		w.Repos = append(w.Repos, rc)
	}
	sort.Slice(w.Repos, func(i, j int) bool { return w.Repos[i].Name < w.Repos[j].Name })
	return nil
}

// git reads one repository's keys, under prefix (git, or repos.NAME).
func (p *parser) git(n *yaml.Node, prefix string) (*RepoConfig, error) {
	f, err := p.fields(n, prefix, "default_target", "targets", "auto_pull")
	if err != nil {
		return nil, err
	}
	d, ok := f["default_target"]
	if !ok {
		return nil, p.errAt(n, prefix+".default_target", "missing; say where git_push goes by default, e.g. { type: local, path: ., branch: reports }")
	}
	w := &RepoConfig{}
	if w.DefaultTarget, err = p.target(d[1], prefix+".default_target"); err != nil {
		return nil, err
	}
	p.ref(prefix+".default_target", w.DefaultTarget, false, nil)
	w.Targets = map[string]*TargetSpec{}
	if t, ok := f["targets"]; ok {
		tf := t[1]
		if tf.Kind != yaml.MappingNode {
			return nil, p.errAt(tf, prefix+".targets", "must be a mapping of names to targets, not %s", kindName(tf))
		}
		for i := 0; i+1 < len(tf.Content); i += 2 {
			k, v := tf.Content[i], tf.Content[i+1]
			key := prefix + ".targets." + k.Value
			if !nameRe.MatchString(k.Value) || k.Value == "default" {
				return nil, p.errAt(k, key, "%q is not a target name: use lowercase letters, digits, \".\", \"_\" and \"-\" (and not \"default\", which names default_target)", k.Value)
			}
			if _, dup := w.Targets[k.Value]; dup {
				return nil, p.errAt(k, key, "given twice")
			}
			spec, err := p.target(v, key)
			if err != nil {
				return nil, err
			}
			w.Targets[k.Value] = spec
			p.ref(key, spec, false, nil)
		}
	}
	if a, ok := f["auto_pull"]; ok {
		an := a[1]
		if an.Kind != yaml.SequenceNode {
			return nil, p.errAt(an, prefix+".auto_pull", "must be a list of { path, source } entries, not %s", kindName(an))
		}
		for i, item := range an.Content {
			key := fmt.Sprintf("%s.auto_pull[%d]", prefix, i)
			pf, err := p.fields(item, key, "path", "source")
			if err != nil {
				return nil, err
			}
			pv, ok := pf["path"]
			if !ok {
				return nil, p.errAt(item, key+".path", "missing; name a file or directory of the source, e.g. templates/")
			}
			path, err := p.str(pv[1], key+".path")
			if err != nil {
				return nil, err
			}
			if path != "." {
				if _, err := pathguard.CheckPath(strings.TrimSuffix(path, "/")); err != nil {
					return nil, p.errAt(pv[1], key+".path", "%v", err)
				}
			}
			spec, at, srcKey := w.DefaultTarget, item, key
			if sv, ok := pf["source"]; ok {
				srcKey = key + ".source"
				if sv[1].Kind == yaml.ScalarNode {
					name, _ := p.str(sv[1], key+".source")
					at = sv[1]
					if name == "default" {
						spec = w.DefaultTarget
					} else if spec = w.Targets[name]; spec == nil {
						return nil, p.errAt(sv[1], key+".source", "no target is named %q; name one of %s.targets, or give a target such as { type: local, path: . }", name, prefix)
					}
				} else if spec, err = p.target(sv[1], key+".source"); err != nil {
					return nil, err
				} else {
					at = nil
				}
			}
			w.AutoPull = append(w.AutoPull, PullSpec{Path: path, Source: spec})
			p.ref(srcKey, spec, true, at)
		}
	}
	return w, nil
}

func (p *parser) target(n *yaml.Node, key string) (*TargetSpec, error) {
	f, err := p.fields(n, key, "type", "path", "repo", "branch")
	if err != nil {
		return nil, err
	}
	tn, ok := f["type"]
	if !ok {
		return nil, p.errAt(n, key+".type", "missing; use %s", targets.KindNames())
	}
	typ, err := p.str(tn[1], key+".type")
	if err != nil {
		return nil, err
	}
	spec := &TargetSpec{Type: typ}
	at := RepoRef{At: p.pos(n), TypeAt: p.pos(tn[1])}
	defer func() { p.specs[spec] = at }()
	kind := targets.KindNamed(typ)
	if kind == nil {
		return nil, p.errAt(tn[1], key+".type", "unknown target type %q; use %s", typ, targets.KindNames())
	}
	if where, err := p.where(n, f, key, kind); err != nil {
		return nil, err
	} else if kind.Local {
		spec.Path, at.PathAt = where, p.pos(f["path"][1])
	} else {
		spec.Repo = where
	}
	if b, ok := f["branch"]; ok {
		if spec.Branch, err = p.str(b[1], key+".branch"); err != nil {
			return nil, err
		}
		if err := checkBranch(spec.Branch); err != nil {
			return nil, p.errAt(b[1], key+".branch", "%v", err)
		}
		at.BranchAt = p.pos(b[1])
	}
	return spec, nil
}

// where reads where a target of kind is: its path (made absolute) or its
// repository, under kind's key; the other kinds' key is refused.
func (p *parser) where(n *yaml.Node, f map[string][2]*yaml.Node, key string, kind *targets.Kind) (string, error) {
	for _, k := range targets.Kinds() {
		if other, ok := f[k.Key()]; ok && k.Key() != kind.Key() {
			return "", p.errAt(other[0], key+"."+k.Key(), "is for %s targets; a %s target takes %s", k.Group, kind.Name, kind.Takes)
		}
	}
	key += "." + kind.Key()
	v, ok := f[kind.Key()]
	if !ok {
		return "", p.errAt(n, key, "%s", kind.Missing)
	}
	where, err := p.str(v[1], key)
	if err != nil {
		return "", err
	}
	if kind.Local {
		where, err = p.resolvePath(where)
	}
	if err == nil && kind.Check != nil {
		err = kind.Check(where)
	}
	if err != nil {
		return "", p.errAt(v[1], key, "%v", err)
	}
	return where, nil
}

// resolvePath makes a target path absolute. A relative path is taken from
// the worker file's directory and may not climb out of it: a worker file
// that could reach anywhere by ".." would be a way around the operator.
func (p *parser) resolvePath(path string) (string, error) {
	if strings.ContainsRune(path, 0) || path == "" {
		return "", errors.New("an empty or malformed path")
	}
	if filepath.IsAbs(path) {
		return filepath.Clean(path), nil
	}
	clean := filepath.Clean(path)
	if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("%q climbs out of the worker file's directory; use an absolute path for a repository elsewhere", path)
	}
	return filepath.Join(p.dir, clean), nil
}

func (p *parser) sandbox(n *yaml.Node, w *Worker) error {
	f, err := p.fields(n, "sandbox", "deny", "max_file_bytes", "max_total_bytes", "max_files", "max_checkpoints")
	if err != nil {
		return err
	}
	if d, ok := f["deny"]; ok {
		dn := d[1]
		if dn.Kind != yaml.SequenceNode {
			return p.errAt(dn, "sandbox.deny", "must be a list of patterns, e.g. [\"*.sqlite\"], not %s", kindName(dn))
		}
		for i, item := range dn.Content {
			key := fmt.Sprintf("sandbox.deny[%d]", i)
			pat, err := p.str(item, key)
			if err != nil {
				return err
			}
			if _, err := pathguard.NewDenyList(pat); err != nil {
				return p.errAt(item, key, "%v", err)
			}
			w.Deny = append(w.Deny, pat)
		}
	}
	size := func(k string, dst *int64) error {
		v, ok := f[k]
		if !ok {
			return nil
		}
		s, err := p.str(v[1], "sandbox."+k)
		if err != nil {
			return err
		}
		n, err := parseSize(s)
		if err != nil {
			return p.errAt(v[1], "sandbox."+k, "%v", err)
		}
		*dst = n
		return nil
	}
	count := func(k string, dst *int) error {
		v, ok := f[k]
		if !ok {
			return nil
		}
		s, err := p.str(v[1], "sandbox."+k)
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(strings.ReplaceAll(s, "_", ""))
		if err != nil || n <= 0 || n > 10_000_000 {
			return p.errAt(v[1], "sandbox."+k, "%q is not a count between 1 and 10000000", s)
		}
		*dst = n
		return nil
	}
	for _, e := range []error{
		size("max_file_bytes", &w.Limits.MaxFileBytes), size("max_total_bytes", &w.Limits.MaxTotalBytes),
		count("max_files", &w.Limits.MaxFiles), count("max_checkpoints", &w.Limits.MaxCheckpoints),
	} {
		if e != nil {
			return e
		}
	}
	if w.Limits.MaxFileBytes > 0 && w.Limits.MaxTotalBytes > 0 && w.Limits.MaxFileBytes > w.Limits.MaxTotalBytes {
		return p.errAt(n, "sandbox", "max_file_bytes (%d) is larger than max_total_bytes (%d)", w.Limits.MaxFileBytes, w.Limits.MaxTotalBytes)
	}
	return nil
}

// parseSize reads "10MiB", "512 KB", "1048576".
func parseSize(s string) (int64, error) { return bytesize.Parse(s) }
