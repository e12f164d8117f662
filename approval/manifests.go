package approval

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// What changed in a manifest of which only some lines run something
// (package.json's scripts, pyproject.toml's build and tool tables, an
// .env file's code-running variables, pom.xml's build): the readers the
// table of files tools run (autorun.go) compares old and new content with.

// jsonKeyChanged reports a change of one top-level key of a JSON object
// (package.json's "scripts"). Content that is not JSON changed whatever
// it holds: the worst is assumed.
func jsonKeyChanged(key string) func(old, new []byte) string {
	return func(old, nu []byte) string {
		read := func(data []byte) (json.RawMessage, bool) {
			if data == nil {
				return nil, true
			}
			var obj map[string]json.RawMessage
			if err := json.Unmarshal(data, &obj); err != nil {
				return nil, false
			}
			return obj[key], true
		}
		o, ok1 := read(old)
		n, ok2 := read(nu)
		if ok1 && ok2 && jsonEqual(o, n) {
			return ""
		}
		return fmt.Sprintf("its %q changed", key)
	}
}

// codeEnvLine is a .env line setting a variable that makes a program
// load or run code it names: the dynamic linker's preloads, Node's and
// the JVM's options, the shells' start-up files, Python's and Perl's and
// Ruby's start-up options, git's commands.
var codeEnvLine = regexp.MustCompile(`^\s*(export\s+)?(LD_PRELOAD|LD_LIBRARY_PATH|LD_AUDIT|DYLD_INSERT_LIBRARIES|DYLD_LIBRARY_PATH|NODE_OPTIONS|NODE_PATH|JAVA_TOOL_OPTIONS|_JAVA_OPTIONS|JDK_JAVA_OPTIONS|MAVEN_OPTS|GRADLE_OPTS|BASH_ENV|ENV|ZDOTDIR|PROMPT_COMMAND|PYTHONSTARTUP|PYTHONPATH|PYTHONHOME|PYTHONINSPECT|PERL5OPT|PERL5LIB|RUBYOPT|RUBYLIB|GIT_[A-Z_]+|PATH|SHELL|EDITOR|VISUAL|PAGER)\s*=`)

// linesChanged reports a line matching re that the new side has and the
// old does not (added, or changed): removing one runs nothing.
func linesChanged(re *regexp.Regexp, what string) func(old, new []byte) string {
	return func(old, nu []byte) string {
		had := map[string]bool{}
		for _, l := range bytes.Split(old, []byte("\n")) {
			if re.Match(l) {
				had[string(bytes.TrimRight(l, " \t\r"))] = true
			}
		}
		for i, l := range bytes.Split(nu, []byte("\n")) {
			if re.Match(l) && !had[string(bytes.TrimRight(l, " \t\r"))] {
				return fmt.Sprintf("line %d is a new %s", i+1, what)
			}
		}
		return ""
	}
}

// inertPyTools are pyproject.toml tables of tools that only format or
// check and load no code their configuration names: a change to them is
// not flagged. Every other [tool.*] table is (pytest's addopts,
// pylint's init-hook, mypy's and coverage's plugins, hatch's build
// hooks, pdm's scripts run code they name).
var inertPyTools = []string{"black", "ruff", "isort", "pyright", "codespell", "towncrier", "bumpversion",
	"commitizen", "pydocstyle", "docformatter", "autopep8", "yapf", "typos"}

// pyprojectChanged names the tables of pyproject.toml whose change runs
// something: [build-system] and the [tool.*] tables of tools that run
// what they name. [project] (metadata and dependencies) is not among
// them. The file is read as TOML tables by their headers, which is how
// every one of those tools writes them; a key set with dotted names at
// the top ("tool.x.y = 1") counts for its table.
func pyprojectChanged(old, nu []byte) string {
	a, b := tomlTables(old), tomlTables(nu)
	var changed []string
	seen := map[string]bool{}
	for _, m := range []map[string]string{a, b} {
		for name := range m {
			if seen[name] || !pyRuns(name) {
				continue
			}
			seen[name] = true
			if a[name] != b[name] {
				changed = append(changed, "["+name+"]")
			}
		}
	}
	if len(changed) == 0 {
		return ""
	}
	sort.Strings(changed)
	return "its " + strings.Join(changed, ", ") + " changed"
}

func pyRuns(table string) bool {
	if table == "build-system" || strings.HasPrefix(table, "build-system.") {
		return true
	}
	rest, ok := strings.CutPrefix(table, "tool.")
	if !ok {
		return false
	}
	tool, _, _ := strings.Cut(rest, ".")
	for _, t := range inertPyTools {
		if tool == t {
			return false
		}
	}
	return true
}

// tomlTables maps each table of a TOML text to its lines, joined: enough
// to tell which tables changed. A dotted key at the top counts for the
// table its first two names make.
func tomlTables(data []byte) map[string]string {
	out := map[string]string{}
	cur := ""
	for _, raw := range strings.Split(string(data), "\n") {
		l := strings.TrimSpace(raw)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if strings.HasPrefix(l, "[") {
			name := strings.Trim(l, "[] \t")
			if i := strings.Index(name, "]"); i >= 0 {
				name = name[:i]
			}
			cur = normTOMLKey(name)
			out[cur] += "\x00" // a table that exists, even empty
			continue
		}
		table := cur
		if table == "" {
			key, _, _ := strings.Cut(l, "=")
			parts := strings.SplitN(normTOMLKey(key), ".", 3)
			if len(parts) > 1 {
				table = parts[0] + "." + parts[1]
				if parts[0] != "tool" {
					table = parts[0]
				}
			}
		}
		out[table] += l + "\n"
	}
	return out
}

// normTOMLKey writes a dotted key without spaces or quotes: [ tool."pytest" ]
// is tool.pytest.
func normTOMLKey(k string) string {
	k = strings.TrimSpace(k)
	var b strings.Builder
	for _, part := range strings.Split(k, ".") {
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strings.ToLower(strings.Trim(strings.TrimSpace(part), `"'`)))
	}
	return b.String()
}

// xmlSectionsChanged names the elements of an XML file (pom.xml's
// <build>, <profiles>...) whose text changed.
func xmlSectionsChanged(tags ...string) func(old, new []byte) string {
	return func(old, nu []byte) string {
		var changed []string
		for _, t := range tags {
			if xmlSection(old, t) != xmlSection(nu, t) {
				changed = append(changed, "<"+t+">")
			}
		}
		if len(changed) == 0 {
			return ""
		}
		return "its " + strings.Join(changed, ", ") + " changed"
	}
}

// xmlSection is the text of every <tag>...</tag> element of data, in
// order. Nested elements of the same name are inside the outer one's
// text, so are counted with it.
func xmlSection(data []byte, tag string) string {
	s := string(data)
	open, close := "<"+tag+">", "</"+tag+">"
	var b strings.Builder
	for {
		i := strings.Index(s, open)
		if i < 0 {
			return b.String()
		}
		j := strings.Index(s[i:], close)
		if j < 0 {
			// Unclosed: the rest counts, so a change there shows.
			return b.String() + s[i:]
		}
		b.WriteString(s[i : i+j+len(close)])
		s = s[i+j+len(close):]
	}
}
