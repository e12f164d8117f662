package gitenv

// How says how airlock keeps a key's program from running.
type How int

const (
	// Set: every git airlock runs has the key set to Key.Value on its
	// command line (GIT_CONFIG_COUNT), which wins over any file. A key
	// with a sub-name ("filter.*.clean") is set for every sub-name the
	// repository's effective config uses (ListConfig), includes read.
	Set How = iota
	// Protocols: the key can only send git to another transport (a
	// rewritten URL); protocol.allow=never refuses every transport but
	// those a fetch of airlock's own allows by name (FetchProtocols).
	Protocols
	// HooksOff: the key makes git run a hook; hooks are off (core.hooksPath
	// points at nothing), so git refuses what needs the hook instead.
	HooksOff
	// NotRead: git reads the key only from the user's own config (its
	// "protected" config: system, global, command line), never from a
	// repository's.
	NotRead
	// Builtins: git consults the key only for a command name that is not
	// one of its own; airlock runs only git's built-in commands.
	Builtins
)

// A Key is one config key whose value is a command git runs or names a
// program (git help config, git 2.39 to today's: every variable whose
// description says it runs a command, a program, a helper, a hook or a
// shell).
type Key struct {
	Name  string // "*" stands for a sub-name of the repository's choosing
	How   How
	Value string // what Set sets it to
}

// Keys is every key whose value is a program or makes git run one, and
// how airlock keeps it from running. A sub-named key found in the
// repository's config brings its siblings under the same sub-name
// ("filter.x.clean" sets filter.x.smudge and filter.x.process too). The tests arm each one with a canary
// (keys_test.go, targets' gitconfig_test.go): a key added here is tested.
//
// The empty value turns a command off where git reads "" as "none" (a
// filter, textconv, askpass) and is a command git cannot start where it
// does not ("" is no program), so it never names one either way.
var Keys = []Key{
	// A command git runs for every path it stats (or true: git's daemon).
	{"core.fsmonitor", Set, "false"},
	// Where hooks are: nowhere. The repository's hooks directory is never
	// looked in, nor a hooksPath of its choosing.
	{"core.hooksPath", Set, "/dev/null"},
	// Hooks named in config (git 2.54 and later), which core.hooksPath
	// does not reach: no command, no event, not enabled (each where the
	// git in use knows the key; one it does not know is ignored).
	{"hook.*.command", Set, ""},
	{"hook.*.event", Set, ""},
	{"hook.*.enabled", Set, "false"},
	// ssh for an ssh:// or host:path URL; airlock's own fetch runs in a
	// directory that reads none of the source's config (see Neutral).
	{"core.sshCommand", Set, ""},
	// The program asked for a password.
	{"core.askPass", Set, ""},
	// git:// through a proxy command; also off by GIT_PROXY_COMMAND= (a
	// multi-valued key whose first match wins, so the environment's is
	// the override that holds) and protocol.git.allow=never.
	{"core.gitProxy", Protocols, ""},
	// Run in an alternate to list its refs (receive-pack, fetch). "" is
	// no program: git says it cannot run it, and lists none.
	{"core.alternateRefsCommand", Set, ""},
	// Editors and pagers: ":" and "cat" are git's own words for none.
	{"core.editor", Set, ":"},
	{"sequence.editor", Set, ":"},
	{"core.pager", Set, "cat"},
	{"pager.*", Set, "false"},
	// Credential helpers: "" empties the list of helpers (multi-valued).
	{"credential.helper", Set, ""},
	{"credential.*.helper", Set, ""},
	// A transport: ext:: runs any command, a remote helper is a program.
	{"protocol.allow", Set, "never"},
	{"protocol.ext.allow", Set, "never"},
	{"protocol.*.allow", Set, "never"},
	// A remote's programs: fetch and push by name run these.
	{"remote.*.uploadpack", Set, "git-upload-pack"},
	{"remote.*.receivepack", Set, "git-receive-pack"},
	{"remote.*.vcs", Set, ""},
	// URL rewriting, possibly to ext:: or a helper.
	{"url.*.insteadOf", Protocols, ""},
	{"url.*.pushInsteadOf", Protocols, ""},
	// Filters run on checkout, add, status, diff of an attributed path.
	{"filter.*.clean", Set, ""},
	{"filter.*.smudge", Set, ""},
	{"filter.*.process", Set, ""},
	// Diff and merge drivers, textconv, external diff, the tools.
	{"diff.external", Set, ""},
	{"diff.*.command", Set, ""},
	{"diff.*.textconv", Set, ""},
	{"merge.*.driver", Set, ""},
	{"difftool.*.cmd", Set, ""},
	{"difftool.*.path", Set, ""},
	{"mergetool.*.cmd", Set, ""},
	{"mergetool.*.path", Set, ""},
	// Signing and verifying (receive-pack's push certificates too).
	{"gpg.program", Set, ""},
	{"gpg.openpgp.program", Set, ""},
	{"gpg.x509.program", Set, ""},
	{"gpg.ssh.program", Set, ""},
	{"gpg.ssh.defaultKeyCommand", Set, ""},
	{"gpg.*.program", Set, ""}, // a format git adds one day
	// git submodule update's "!command"; no recursion into submodules,
	// each of which has a config of its own.
	{"submodule.*.update", Set, "none"},
	{"submodule.recurse", Set, "false"},
	{"fetch.recurseSubmodules", Set, "false"},
	// receive-pack hands these refs to the proc-receive hook. The key is
	// multi-valued with no reset: with hooks off, git refuses such a push.
	{"receive.procReceiveRefs", HooksOff, ""},
	// Automatic gc and maintenance after a push or a fetch: a process
	// that outlives airlock's and runs the pre-auto-gc hook.
	{"receive.autogc", Set, "false"},
	{"gc.auto", Set, "0"},
	{"maintenance.auto", Set, "false"},
	// Run by gc (git 2.42 and later) for objects to keep; gc never runs.
	{"gc.recentObjectsHook", Set, ""},
	// upload-pack's pack-objects wrapper: protected config only.
	{"uploadpack.packObjectsHook", NotRead, ""},
	// "!command" aliases: never consulted for a built-in command.
	{"alias.*", Builtins, ""},
	// The rest name programs for commands airlock never runs; set all the
	// same, so that none ever starts if one is run one day.
	{"trailer.*.command", Set, ""},
	{"trailer.*.cmd", Set, ""},
	{"sendemail.toCmd", Set, ""},
	{"sendemail.ccCmd", Set, ""},
	{"sendemail.headerCmd", Set, ""},
	{"sendemail.smtpServer", Set, ""},
	{"sendemail.*.toCmd", Set, ""},
	{"sendemail.*.ccCmd", Set, ""},
	{"sendemail.*.headerCmd", Set, ""},
	{"sendemail.*.smtpServer", Set, ""},
	{"sendemail.sendmailCmd", Set, ""}, // git 2.33 and later
	{"sendemail.*.sendmailCmd", Set, ""},
	{"tar.*.command", Set, ""},
	{"imap.tunnel", Set, ""},
	{"interactive.diffFilter", Set, ""},
	{"web.browser", Set, ""},
	{"help.browser", Set, ""},
	{"browser.*.cmd", Set, ""},
	{"browser.*.path", Set, ""},
	{"man.viewer", Set, ""},
	{"man.*.cmd", Set, ""},
	{"man.*.path", Set, ""},
	{"instaweb.httpd", Set, ""},
	{"instaweb.browser", Set, ""},
	{"guitool.*.cmd", Set, ""},
}

// Checks are settings every git airlock runs has beside Keys: git's own
// object checks on everything received (a second wall behind the tree
// check).
var Checks = [][2]string{
	{"receive.fsckObjects", "true"},
	{"transfer.fsckObjects", "true"},
	// receive-pack never writes a work tree: a repository's
	// updateInstead would check a push out into whatever git takes for
	// its work tree (a "bare" target's own git directory, when its config
	// says core.bare false). airlock moves a checked-out branch itself.
	{"receive.denyCurrentBranch", "refuse"},
	{"receive.denyDeleteCurrent", "refuse"},
}
