package approval

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/airlock-dev/airlock/internal/change"
	"github.com/airlock-dev/airlock/internal/glob"
)

// runsRule is one row of the table of files that tools run (or take
// orders from) without anyone asking for that file: on entering a
// directory or opening a folder, on every build, install or test, in CI,
// as a git hook, or as the toolchain a pin names.
//
// What is in the table, and what is not: a file is in it when a routine
// command (cd, opening the editor, make, cargo build, pip install, npm
// install, pytest, ./gradlew, docker build, git commit) runs what it says,
// so that a change to it acts before anyone reads the code it affects.
// Manifests whose every edit would be flagged are flagged only for the
// lines that run something (package.json's scripts, go.mod's go and
// toolchain lines, pyproject.toml's build and tool tables, Cargo.toml's
// build script, pom.xml's build): a version bump is not news. Left out,
// and why: Bazel BUILD files (every change in a Bazel repository touches
// them; the roots that fetch and run rules, WORKSPACE, MODULE.bazel,
// .bzl and .bazelrc, are in), dependency lists (a change of dependency is
// a change of code the diff names; flagging every one would teach the
// reviewer to skip flags), .editorconfig (formatting only), .env files
// (data, not code) but for the lines that set a variable making programs
// run code (codeEnvLine).
//
// A Makefile is in, though make runs it only when asked: make is the
// command every build and most CI run, its recipes are shell run as they
// stand, and a one-line change in one is as easy to miss as a build.rs.
type runsRule struct {
	// pattern is a glob (internal/glob) over the lower-cased path: names
	// are matched whatever their case, as a case-insensitive filesystem
	// (macOS, Windows) would find them.
	pattern string
	// code is the flag raised: FlagAutorun, FlagCI or FlagSecret.
	code string
	// why says what runs it and when, as a clause: "direnv runs it on
	// entering the directory".
	why string
	// changed, for a file flagged only for some of its content, says
	// what of it changed ("" when nothing that runs did): it gets both
	// sides, nil for a side that does not exist.
	changed func(old, new []byte) string

	glob *glob.Pattern
}

// runsTable is the table; see runsRule.
var runsTable = compileRuns([]runsRule{
	// Entering a directory, and toolchain pins: what direnv, nix-direnv,
	// devenv, mise and asdf read on their own (their sources' lists:
	// direnv's findEnvUp and stdlib, nix-direnv's watch_file calls,
	// devenv's direnvrc, mise's LOCAL_CONFIG_FILENAMES and
	// env_config_patterns, asdf's .tool-versions). Left out: direnv's
	// direnv.toml and asdf's .asdfrc (read from the user's home, never from
	// a repository), mise's task directories (run only when mise run names
	// a task, as any script), and the idiomatic version files mise and asdf
	// read only when enabled (off by default; those other managers read
	// are in below).
	// direnv: .envrc on entering, and the files an .envrc sources by its
	// stdlib's own examples (source_env_if_exists .envrc.private, and the
	// .envrc.local convention); .env when load_dotenv is on is data, below.
	{pattern: "**/.envrc", why: "direnv runs it on entering the directory"},
	{pattern: "**/.envrc.local", why: "an .envrc sources it on entering the directory (direnv's source_env_if_exists)"},
	{pattern: "**/.envrc.private", why: "an .envrc sources it on entering the directory (direnv's source_env_if_exists)"},
	// direnv_layout_dir: layout python/go/ruby put its bin first on PATH,
	// and nix-direnv sources its cached flake-profile-*.rc and
	// nix-profile-*.rc on entering, instead of evaluating the flake.
	{pattern: "**/.direnv/**", why: "direnv's layouts put its programs first on PATH and nix-direnv sources its cached profiles on entering the directory"},
	// nix, and nix-direnv's use flake / use nix.
	{pattern: "**/flake.nix", why: "nix evaluates it for nix develop and direnv's use flake, and its shellHook runs on entering"},
	{pattern: "**/shell.nix", why: "nix-shell and direnv's use nix evaluate it, and its shellHook runs on entering"},
	{pattern: "**/default.nix", why: "nix-build and nix-shell evaluate it"},
	{pattern: "**/flake.lock", why: "it pins the flake's inputs, which nix fetches and evaluates"},
	{pattern: "**/devshell.toml", why: "numtide's devshell (nix-direnv watches it) runs its commands and startup hooks on entering"},
	// devenv (direnv's use devenv watches these five).
	{pattern: "**/devenv.nix", why: devenvWhy},
	{pattern: "**/devenv.local.nix", why: devenvWhy},
	{pattern: "**/devenv.yaml", why: devenvWhy},
	{pattern: "**/devenv.local.yaml", why: devenvWhy},
	{pattern: "**/devenv.lock", why: "it pins devenv's inputs, which nix fetches and evaluates on entering"},
	{pattern: "**/devbox.json", why: "devbox runs its init_hook and scripts in devbox shell"},
	// asdf and mise.
	{pattern: "**/.tool-versions", why: "asdf and mise install and run the tool versions it pins"},
	// mise: in every directory from / down to the current one; .config/
	// mise.toml and .config/mise/mise.toml are mise.toml by name, and
	// .config/mise/config[.*].toml is mise/config[.*].toml.
	// mise.*.toml is mise.local.toml and mise.<MISE_ENV>[.local].toml.
	{pattern: "**/mise.toml", why: miseWhy},
	{pattern: "**/mise.*.toml", why: miseWhy},
	{pattern: "**/.mise.toml", why: miseWhy},
	{pattern: "**/.mise.*.toml", why: miseWhy},
	{pattern: "**/.mise/config.toml", why: miseWhy},
	{pattern: "**/.mise/config.*.toml", why: miseWhy},
	{pattern: "**/.mise/conf.d/*.toml", why: miseWhy},
	{pattern: "**/mise/config.toml", why: miseWhy},
	{pattern: "**/mise/config.*.toml", why: miseWhy},
	{pattern: "**/.config/mise/conf.d/*.toml", why: miseWhy},
	{pattern: "**/.rtx.toml", why: miseWhy + " (as rtx, its old name)"},
	{pattern: "**/.rtx.*.toml", why: miseWhy + " (as rtx, its old name)"},
	{pattern: "**/.miserc.toml", why: "mise reads it first on every command, and it picks MISE_ENV: which of the config files that run hooks load"},
	{pattern: "**/.python-version", why: "pyenv and uv pick (and uv downloads) the Python it pins"},
	{pattern: "**/.nvmrc", why: "nvm, fnm and volta switch to (and may install) the Node it pins"},
	{pattern: "**/.node-version", why: "nvm, fnm and volta switch to (and may install) the Node it pins"},
	{pattern: "**/.ruby-version", why: "rbenv, chruby and rvm switch to the Ruby it pins"},
	{pattern: "**/.sdkmanrc", why: "sdkman switches to (and installs) the JDK and tools it pins"},

	// Python.
	{pattern: "**/setup.py", why: "pip runs it on install"},
	{pattern: "**/setup.cfg", why: "setuptools reads it on install and pytest on every test run (addopts can load plugins)"},
	{pattern: "**/pyproject.toml", changed: pyprojectChanged,
		why: "pip runs its build backend on install, and the tools it configures run what it names (pytest plugins, build hooks, pylint's init-hook)"},
	{pattern: "**/sitecustomize.py", why: "Python imports it at every start-up when its directory is on the path"},
	{pattern: "**/usercustomize.py", why: "Python imports it at every start-up when its directory is on the path"},
	{pattern: "**/*.pth", why: "Python runs its import lines at every start-up when it is in a site directory"},
	{pattern: "**/conftest.py", why: "pytest runs it on every test run"},
	{pattern: "**/pytest.ini", why: "pytest reads it on every test run (addopts can load plugins)"},
	{pattern: "**/tox.ini", why: "tox runs the commands it lists, and pytest reads it on every test run"},
	{pattern: "**/noxfile.py", why: "nox runs it"},
	{pattern: "**/pipfile", why: "pipenv installs the packages from the sources it names, and runs its scripts"},
	{pattern: "**/poetry.toml", why: "poetry reads it on every command (where it installs from, how it makes environments)"},
	{pattern: "**/.pdbrc", why: "pdb runs its commands on every start in the directory"},
	{pattern: "**/conf.py", why: "Sphinx runs it on every docs build (Read the Docs builds on every push)"},
	{pattern: "**/hatch_build.py", why: "Hatch runs it as a build hook on every build when pyproject.toml or hatch.toml names a custom hook (its default file)"},
	{pattern: "**/hatch.toml", why: "Hatch reads it on every command (build hooks, environments and the scripts they run)"},

	// JavaScript.
	{pattern: "**/package.json", code: FlagCI, changed: jsonKeyChanged("scripts"), why: "npm runs them on install, and CI runs them"},
	{pattern: "**/package.json", changed: jsonKeyChanged("packageManager"), why: "corepack downloads and runs the package manager it names"},
	// Configuration that is code: loaded on every test run, build or
	// lint, and by editors on opening or saving a file.
	{pattern: "**/eslint.config.*", why: jsConfigWhy("ESLint, and editors on opening a file,")},
	{pattern: "**/.eslintrc.js", why: jsConfigWhy("ESLint, and editors on opening a file,")},
	{pattern: "**/.eslintrc.cjs", why: jsConfigWhy("ESLint, and editors on opening a file,")},
	{pattern: "**/prettier.config.*", why: jsConfigWhy("Prettier, and editors on saving a file,")},
	{pattern: "**/.prettierrc.js", why: jsConfigWhy("Prettier, and editors on saving a file,")},
	{pattern: "**/.prettierrc.cjs", why: jsConfigWhy("Prettier, and editors on saving a file,")},
	{pattern: "**/.prettierrc.mjs", why: jsConfigWhy("Prettier, and editors on saving a file,")},
	{pattern: "**/jest.config.*", why: jsConfigWhy("Jest, on every test run,")},
	{pattern: "**/vitest.config.*", why: jsConfigWhy("Vitest, on every test run,")},
	{pattern: "**/.mocharc.js", why: jsConfigWhy("Mocha, on every test run,")},
	{pattern: "**/.mocharc.cjs", why: jsConfigWhy("Mocha, on every test run,")},
	{pattern: "**/karma.conf.js", why: jsConfigWhy("Karma, on every test run,")},
	{pattern: "**/playwright.config.*", why: jsConfigWhy("Playwright, on every test run,")},
	{pattern: "**/babel.config.*", why: jsConfigWhy("Babel, on every build and test run,")},
	{pattern: "**/.babelrc.js", why: jsConfigWhy("Babel, on every build and test run,")},
	{pattern: "**/.babelrc.cjs", why: jsConfigWhy("Babel, on every build and test run,")},
	{pattern: "**/.babelrc.mjs", why: jsConfigWhy("Babel, on every build and test run,")},
	{pattern: "**/vite.config.*", why: jsConfigWhy("Vite, on every build and dev server start,")},
	{pattern: "**/webpack.config.*", why: jsConfigWhy("webpack, on every build,")},
	{pattern: "**/rollup.config.*", why: jsConfigWhy("Rollup, on every build,")},
	{pattern: "**/next.config.*", why: jsConfigWhy("Next.js, on every build and dev server start,")},
	{pattern: "**/postcss.config.*", why: jsConfigWhy("PostCSS, on every build,")},
	{pattern: "**/tailwind.config.*", why: jsConfigWhy("Tailwind, on every build,")},
	{pattern: "**/gulpfile.*", why: "gulp runs it as code"},
	{pattern: "**/gruntfile.*", why: "grunt runs it as code"},
	{pattern: "**/composer.json", code: FlagCI, changed: jsonKeyChanged("scripts"), why: "composer runs them on install and update, and CI runs them"},
	{pattern: "**/.npmrc", why: "npm reads it on every command (the registry, script-shell, and node-options that load code into every script)"},
	{pattern: "**/.yarnrc", why: "yarn reads it on every command, and its yarn-path makes yarn run another file as itself"},
	{pattern: "**/.yarnrc.yml", why: "yarn reads it on every command (its yarnPath runs a file as yarn itself; its plugins load)"},
	{pattern: "**/.yarn/releases/**", why: "yarn runs it as itself on every command (yarnPath)"},
	{pattern: "**/.yarn/plugins/**", why: "yarn loads it on every command"},
	{pattern: "**/.pnpmfile.cjs", why: "pnpm runs its hooks on every install"},
	{pattern: "**/.pnpmfile.mjs", why: "pnpm runs its hooks on every install"},
	{pattern: "**/bunfig.toml", why: "bun reads it on every run and test, and runs its preload scripts first"},
	{pattern: "**/.lintstagedrc*", code: FlagCI, why: "lint-staged runs its commands on commit, as a git hook"},

	// Rust.
	{pattern: "**/build.rs", why: "Cargo runs it on every build"},
	{pattern: "**/.cargo/config.toml", why: "Cargo reads it on every build and runs the runners, linkers, wrappers and aliases it names"},
	{pattern: "**/.cargo/config", why: "Cargo reads it on every build and runs the runners, linkers, wrappers and aliases it names"},
	{pattern: "**/rust-toolchain.toml", why: "rustup installs and runs the toolchain it names (a path runs any program)"},
	{pattern: "**/rust-toolchain", why: "rustup installs and runs the toolchain it names (a path runs any program)"},
	{pattern: "**/cargo.toml", changed: linesChanged(regexp.MustCompile(`^\s*(build|proc-macro)\s*=`), "build or proc-macro line"),
		why: "Cargo runs the build script or proc-macro it names on every build"},

	// Go.
	{pattern: "**/go.mod", changed: linesChanged(regexp.MustCompile(`^\s*(go|toolchain)\s`), "go or toolchain line"),
		why: "go downloads and runs the toolchain it names (GOTOOLCHAIN=auto, the default)"},
	{pattern: "**/go.work", why: "go uses it for every command below it (which modules build; its go and toolchain lines pick the toolchain)"},
	{pattern: "**/*.go", changed: linesChanged(regexp.MustCompile(`^//go:generate[ \t]`), "//go:generate line"),
		why: "go generate runs the command it names"},
	// .env files are data, but tools load them into the environment of
	// what they start (pipenv run and shell, direnv's dotenv, docker
	// compose's env_file, python-dotenv in an app's start-up), and a few
	// variables make the next program run code: those lines are flagged.
	{pattern: "**/.env", changed: linesChanged(codeEnvLine, "variable that makes programs run code"),
		why: "pipenv, direnv, docker compose and dotenv load it into the environment of what they start"},
	{pattern: "**/.env.*", changed: linesChanged(codeEnvLine, "variable that makes programs run code"),
		why: "pipenv, direnv, docker compose and dotenv load it into the environment of what they start"},
	{pattern: "**/vendor/modules.txt", why: "go builds the vendored copies it lists, which go.sum does not check"},
	{pattern: "**/vendor/**/*.go", why: "go builds vendored code as it stands, without checking it against go.sum"},

	// The JVM.
	{pattern: "**/gradlew", why: "./gradlew runs it (the Gradle wrapper)"},
	{pattern: "**/gradlew.bat", why: "gradlew.bat runs it (the Gradle wrapper)"},
	{pattern: "**/gradle/wrapper/gradle-wrapper.jar", why: "./gradlew runs it, a binary the diff cannot show"},
	{pattern: "**/gradle/wrapper/gradle-wrapper.properties", why: "./gradlew downloads and runs the Gradle its distributionUrl names"},
	{pattern: "**/*.gradle", why: "Gradle runs it as code on every build"},
	{pattern: "**/*.gradle.kts", why: "Gradle runs it as code on every build"},
	{pattern: "**/gradle.properties", why: "Gradle reads it on every build (JVM arguments, where an agent runs any code; properties the build uses)"},
	{pattern: "**/buildsrc/**", why: "Gradle compiles and runs it on every build"},
	{pattern: "**/mvnw", why: "./mvnw runs it (the Maven wrapper)"},
	{pattern: "**/mvnw.cmd", why: "mvnw.cmd runs it (the Maven wrapper)"},
	{pattern: "**/.mvn/wrapper/**", why: "./mvnw runs it, or downloads and runs the Maven it names"},
	{pattern: "**/.mvn/extensions.xml", why: "Maven loads the extensions it names on every build"},
	{pattern: "**/.mvn/maven.config", why: "Maven adds the options it holds to every command"},
	{pattern: "**/.mvn/jvm.config", why: "Maven starts every build with its JVM arguments (where an agent runs any code)"},
	{pattern: "**/pom.xml", changed: xmlSectionsChanged("build", "profiles", "repositories", "pluginRepositories"),
		why: "Maven runs the plugins it names on every build and fetches from the repositories it names"},
	{pattern: "**/*.sbt", why: "sbt runs it as code on every build"},
	{pattern: "**/project/*.scala", why: "sbt compiles and runs it as part of the build definition on every build"},
	{pattern: "**/directory.build.props", why: msbuildWhy},
	{pattern: "**/directory.build.targets", why: msbuildWhy},
	{pattern: "**/*.csproj", why: "MSBuild runs the targets and tasks it holds (Exec runs any command) on every build"},
	{pattern: "**/*.fsproj", why: "MSBuild runs the targets and tasks it holds (Exec runs any command) on every build"},
	{pattern: "**/*.vbproj", why: "MSBuild runs the targets and tasks it holds (Exec runs any command) on every build"},
	{pattern: "**/nuget.config", why: "dotnet restore and NuGet take packages from the sources it names (and their build targets run on every build)"},
	{pattern: "**/global.json", why: "dotnet picks the SDK it pins, and downloads and runs the MSBuild SDKs it names"},
	{pattern: "**/build.zig", why: "zig build runs it"},
	{pattern: "**/package.swift", why: "swift build and Xcode run it as Swift on every build"},
	{pattern: "**/mix.exs", why: "mix runs it as Elixir on every command"},
	{pattern: "**/setup.hs", why: "cabal runs it on every build of a package with build-type Custom"},
	{pattern: "**/makefile.pl", why: "perl Makefile.PL runs it, before every build from source"},
	{pattern: "**/build.pl", why: "perl Build.PL runs it, before every build from source"},
	{pattern: "**/cpanfile", why: "cpanm and carton run it as Perl on install"},
	{pattern: "**/dune", why: "dune runs the actions of its rules on every build"},
	{pattern: "**/project/build.properties", why: "sbt's launcher downloads and runs the sbt it pins"},

	// Builds elsewhere.
	{pattern: "**/makefile", why: "make runs its recipes on every build, and so does CI's make"},
	{pattern: "**/gnumakefile", why: "make runs its recipes on every build, and so does CI's make"},
	{pattern: "**/*.mk", why: "make includes it in builds"},
	{pattern: "**/makefile.am", why: "automake turns it into the Makefile every build runs"},
	{pattern: "**/makefile.in", why: "configure turns it into the Makefile every build runs"},
	{pattern: "**/configure", why: "./configure runs it, before every build from source"},
	{pattern: "**/configure.ac", why: "autoreconf turns it into ./configure"},
	{pattern: "**/cmakelists.txt", why: "CMake runs it on every configure (execute_process runs any command)"},
	{pattern: "**/*.cmake", why: "CMake runs it when a CMakeLists.txt includes it"},
	{pattern: "**/cmakepresets.json", why: "CMake and IDEs configure with it (toolchain files, environment)"},
	{pattern: "**/cmakeuserpresets.json", why: "CMake and IDEs configure with it (toolchain files, environment)"},
	{pattern: "**/meson.build", why: "Meson runs it on every configure (run_command runs any command)"},
	{pattern: "**/.bazelrc", why: "Bazel reads it on every command (flags, --run_under, try-import)"},
	{pattern: "**/.bazelversion", why: "bazelisk downloads and runs the Bazel it pins"},
	{pattern: "**/workspace", why: "Bazel fetches and runs the repository rules it names"},
	{pattern: "**/workspace.bazel", why: "Bazel fetches and runs the repository rules it names"},
	{pattern: "**/module.bazel", why: "Bazel fetches and runs the modules and extensions it names"},
	{pattern: "**/*.bzl", why: "Bazel runs its rules and macros on every build"},
	{pattern: "**/justfile", why: "just runs its recipes"},
	{pattern: "**/.justfile", why: "just runs its recipes"},
	{pattern: "**/taskfile*.yml", why: "task runs its commands"},
	{pattern: "**/taskfile*.yaml", why: "task runs its commands"},
	{pattern: "**/rakefile", why: "rake runs it as Ruby"},
	{pattern: "**/*.rake", why: "rake runs it as Ruby"},
	{pattern: "**/gemfile", why: "Bundler runs it as Ruby on every bundle command"},
	{pattern: "**/.bundle/config", why: "Bundler reads it on every command (the Gemfile it uses, where gems come from, build flags)"},
	{pattern: "**/podfile", why: "CocoaPods runs it as Ruby on every pod install"},
	{pattern: "**/vagrantfile", why: "vagrant runs it as Ruby on every command"},
	{pattern: "**/brewfile", why: "brew bundle runs it as Ruby"},
	{pattern: "**/fastfile", why: "fastlane runs it as Ruby"},
	{pattern: "**/dangerfile", code: FlagCI, why: "Danger runs it as Ruby in CI on every pull request"},
	{pattern: "**/.rubocop.yml", why: "RuboCop loads the Ruby files its require names on every run (editors run it on saving a file)"},
	{pattern: "**/.rspec", why: "RSpec adds its options (--require loads any file) to every test run"},
	{pattern: "**/.pryrc", why: "pry runs it as Ruby on every start in the directory"},
	{pattern: "**/.rvmrc", why: "RVM runs it as shell on entering the directory"},
	{pattern: "**/.iex.exs", why: "IEx runs it as Elixir on every start in the directory"},
	{pattern: "**/.ghci", why: "GHCi runs its commands on every start in the directory"},
	{pattern: "**/.ocamlinit", why: "the OCaml toplevel (and utop) runs it on every start in the directory"},
	{pattern: "**/.gdbinit", why: "gdb runs its commands on start in the directory when its auto-load safe-path allows it"},
	{pattern: "**/.lldbinit", why: "lldb runs its commands on start in the directory when target.load-cwd-lldbinit allows it"},
	{pattern: "**/ansible.cfg", why: "Ansible reads it from the directory on every command (plugin paths, a vault password file that is a program)"},
	{pattern: "**/earthfile", why: "earthly runs the commands it holds"},
	{pattern: "**/skaffold.yaml", why: "skaffold dev builds and runs what it names"},
	{pattern: "**/procfile", code: FlagCI, why: "Heroku and foreman run the commands it lists"},
	{pattern: "**/*.gemspec", why: "Bundler and gem run it as Ruby on every install"},
	{pattern: "**/tiltfile", why: "tilt up runs it, and the commands it names"},

	// Containers and workspaces in the cloud.
	{pattern: "**/dockerfile", why: dockerWhy},
	{pattern: "**/dockerfile.*", why: dockerWhy},
	{pattern: "**/*.dockerfile", why: dockerWhy},
	{pattern: "**/containerfile", why: dockerWhy},
	{pattern: "**/docker-compose*.yml", why: composeWhy},
	{pattern: "**/docker-compose*.yaml", why: composeWhy},
	{pattern: "**/compose.yml", why: composeWhy},
	{pattern: "**/compose.yaml", why: composeWhy},
	{pattern: "**/compose.*.yml", why: composeWhy},
	{pattern: "**/compose.*.yaml", why: composeWhy},
	{pattern: "**/.devcontainer/**", why: "builds and runs a container when the folder is opened"},
	{pattern: "**/.devcontainer.json", why: "builds and runs a container when the folder is opened"},
	{pattern: "**/.gitpod.yml", why: "Gitpod runs its tasks on opening the workspace"},

	// Editors, and the coding agents of the next session.
	{pattern: "**/.vscode/tasks.json", why: vscodeWhy},
	{pattern: "**/.vscode/settings.json", why: vscodeWhy},
	{pattern: "**/.vscode/launch.json", why: vscodeWhy},
	{pattern: "**/.vscode/extensions.json", why: vscodeWhy},
	{pattern: "**/.vscode/mcp.json", why: "VS Code starts the MCP servers it names"},
	{pattern: "**/*.code-workspace", why: vscodeWhy},
	{pattern: "**/.idea/runconfigurations/**", why: ideaWhy},
	{pattern: "**/.idea/workspace.xml", why: ideaWhy},
	{pattern: "**/.run/*.run.xml", why: ideaWhy},
	{pattern: "**/.idea/externaldependencies.xml", why: "IntelliJ IDEs ask to install the plugins it names on opening the project"},
	{pattern: "**/.exrc", why: "vim and neovim source it on start in the directory when exrc is set"},
	{pattern: "**/.vimrc", why: "vim sources it on start in the directory when exrc is set"},
	{pattern: "**/.nvimrc", why: "neovim sources it on start in the directory when exrc is set"},
	{pattern: "**/.nvim.lua", why: "neovim runs it on start in the directory when exrc is set"},
	{pattern: "**/.dir-locals.el", why: "Emacs applies it on opening a file below it (its eval forms run once marked safe)"},
	{pattern: "**/.dir-locals-2.el", why: "Emacs applies it on opening a file below it (its eval forms run once marked safe)"},
	{pattern: "**/.zed/settings.json", why: "Zed reads it on opening the folder and starts the language servers it names"},
	{pattern: "**/.zed/tasks.json", why: "Zed offers and runs its tasks"},
	{pattern: "**/.helix/languages.toml", why: "Helix starts the language servers it names on opening a file"},
	{pattern: "**/.claude/settings.json", why: "Claude Code runs the hooks it names on every tool use, and takes its permissions"},
	{pattern: "**/.claude/settings.local.json", why: "Claude Code runs the hooks it names on every tool use, and takes its permissions"},
	{pattern: "**/.mcp.json", why: "Claude Code and other MCP clients start the servers it names"},
	{pattern: "**/.cursor/mcp.json", why: "Cursor starts the MCP servers it names"},
	{pattern: "**/.gemini/settings.json", why: "Gemini CLI starts the MCP servers it names"},
	{pattern: "**/agents.md", why: agentWhy},
	{pattern: "**/claude.md", why: agentWhy},
	{pattern: "**/gemini.md", why: agentWhy},
	{pattern: "**/.cursorrules", why: agentWhy},
	{pattern: "**/.cursor/rules/**", why: agentWhy},
	{pattern: ".github/copilot-instructions.md", why: agentWhy},

	// git itself.
	{pattern: "**/.gitattributes", why: "it can name filter and diff drivers that git runs"},
	{pattern: "**/.gitmodules", why: "it makes git fetch and check out other repositories"},
	{pattern: "**/.lfsconfig", why: "git-lfs reads it on every clone, fetch and push, and can send and take content from another server"},

	// Git hooks: by their directories, their managers, and by name in any
	// directory, which core.hooksPath may name.
	{pattern: "**/.husky/**", code: FlagCI, why: "husky has git run it as a hook"},
	{pattern: "**/.githooks/**", code: FlagCI, why: "git runs it as a hook when core.hooksPath names its directory"},
	{pattern: "**/.pre-commit-config.yaml", code: FlagCI, why: "pre-commit runs the hooks it names on commit"},
	{pattern: "**/.pre-commit-hooks.yaml", code: FlagCI, why: "defines pre-commit hooks that other repositories run"},
	{pattern: "**/lefthook.yml", code: FlagCI, why: lefthookWhy},
	{pattern: "**/lefthook.yaml", code: FlagCI, why: lefthookWhy},
	{pattern: "**/.lefthook.yml", code: FlagCI, why: lefthookWhy},
	{pattern: "**/.lefthook.yaml", code: FlagCI, why: lefthookWhy},
	{pattern: "**/lefthook-local.yml", code: FlagCI, why: lefthookWhy},
	{pattern: "**/lefthook-local.yaml", code: FlagCI, why: lefthookWhy},
	{pattern: "**/.lefthook-local.yml", code: FlagCI, why: lefthookWhy},
	{pattern: "**/.lefthook-local.yaml", code: FlagCI, why: lefthookWhy},
	{pattern: "**/.overcommit.yml", code: FlagCI, why: "overcommit runs the hooks it names as git hooks"},

	// CI, and the bots that act on the repository.
	{pattern: ".github/workflows/**", code: FlagCI, why: "GitHub Actions runs it as a workflow"},
	{pattern: "**/.github/actions/**", code: FlagCI, why: "GitHub Actions workflows run it as an action"},
	{pattern: "**/action.yml", code: FlagCI, why: "it defines a GitHub Action, which the workflows that use it run"},
	{pattern: "**/action.yaml", code: FlagCI, why: "it defines a GitHub Action, which the workflows that use it run"},
	{pattern: ".github/codeowners", code: FlagCI, why: codeownersWhy},
	{pattern: "codeowners", code: FlagCI, why: codeownersWhy},
	{pattern: "docs/codeowners", code: FlagCI, why: codeownersWhy},
	{pattern: ".github/dependabot.yml", code: FlagCI, why: dependabotWhy},
	{pattern: ".github/dependabot.yaml", code: FlagCI, why: dependabotWhy},
	{pattern: "**/renovate.json", code: FlagCI, why: renovateWhy},
	{pattern: "**/renovate.json5", code: FlagCI, why: renovateWhy},
	{pattern: "**/.renovaterc", code: FlagCI, why: renovateWhy},
	{pattern: "**/.renovaterc.json", code: FlagCI, why: renovateWhy},
	{pattern: "**/.gitlab-ci.yml", code: FlagCI, why: "GitLab CI runs it"},
	{pattern: ".gitlab/**", code: FlagCI, why: "GitLab reads it (CI includes, templates)"},
	{pattern: ".circleci/**", code: FlagCI, why: "CircleCI runs it as a pipeline"},
	{pattern: "**/.travis.yml", code: FlagCI, why: "Travis runs it as a pipeline"},
	{pattern: "**/jenkinsfile", code: FlagCI, why: "Jenkins runs it as a pipeline"},
	{pattern: "**/azure-pipelines.yml", code: FlagCI, why: "Azure Pipelines runs it as a pipeline"},
	{pattern: "**/azure-pipelines.yaml", code: FlagCI, why: "Azure Pipelines runs it as a pipeline"},
	{pattern: ".buildkite/**", code: FlagCI, why: "Buildkite runs it as a pipeline"},
	{pattern: "**/bitbucket-pipelines.yml", code: FlagCI, why: "Bitbucket runs it as a pipeline"},
	{pattern: ".drone.yml", code: FlagCI, why: "Drone runs it as a pipeline"},
	{pattern: ".woodpecker.yml", code: FlagCI, why: "Woodpecker runs it as a pipeline"},
	{pattern: ".woodpecker/**", code: FlagCI, why: "Woodpecker runs it as a pipeline"},
	{pattern: "appveyor.yml", code: FlagCI, why: "AppVeyor runs it as a pipeline"},
	{pattern: ".appveyor.yml", code: FlagCI, why: "AppVeyor runs it as a pipeline"},
	{pattern: ".cirrus.yml", code: FlagCI, why: "Cirrus CI runs it as a pipeline"},
	{pattern: "**/cloudbuild.yaml", code: FlagCI, why: "Cloud Build runs it as a pipeline"},
	{pattern: "**/cloudbuild.yml", code: FlagCI, why: "Cloud Build runs it as a pipeline"},
	{pattern: ".semaphore/**", code: FlagCI, why: "Semaphore runs it as a pipeline"},
	{pattern: ".tekton/**", code: FlagCI, why: "Tekton runs it as a pipeline"},
	{pattern: ".forgejo/workflows/**", code: FlagCI, why: "Forgejo Actions runs it as a pipeline"},
	{pattern: ".gitea/workflows/**", code: FlagCI, why: "Gitea Actions runs it as a pipeline"},
	{pattern: "**/.readthedocs.yaml", code: FlagCI, why: "Read the Docs builds with it on every push"},
	{pattern: "**/.readthedocs.yml", code: FlagCI, why: "Read the Docs builds with it on every push"},

	// Files that exist to hold credentials.
	{pattern: "**/.pypirc", code: FlagSecret, why: "it is where twine and pip keep index passwords; check it holds none"},
	{pattern: "**/.netrc", code: FlagSecret, why: "it is where curl, git and pip take logins from; check it holds none"},
	{pattern: "**/_netrc", code: FlagSecret, why: "it is where curl, git and pip take logins from; check it holds none"},
	{pattern: "**/.git-credentials", code: FlagSecret, why: "it is where git's credential store keeps passwords and tokens; check it holds none"},
	{pattern: "**/.docker/config.json", code: FlagSecret, why: "it is where docker keeps registry credentials; check it holds none"},
}, gitHookNames)

const (
	miseWhy        = "mise reads it on entering the directory (hooks, environment scripts, tool versions, tasks)"
	devenvWhy      = "devenv (and direnv's use devenv) evaluates it on entering, and its enterShell runs"
	dockerWhy      = "docker build runs its RUN lines, on the reviewer's machine or in CI"
	composeWhy     = "docker compose builds and starts what it names, with the mounts and privileges it gives"
	vscodeWhy      = "VS Code reads it on opening the folder (tasks, settings, launch commands)"
	ideaWhy        = "IntelliJ IDEs offer and run its run configurations and their before-launch tasks"
	agentWhy       = "coding agents take it as instructions at every start, so it steers the next agent in this repository"
	lefthookWhy    = "lefthook runs the commands it names as git hooks"
	codeownersWhy  = "it names who must approve pull requests, so a change can take a required reviewer away"
	dependabotWhy  = "Dependabot opens pull requests by it, and its insecure-external-code-execution lets package managers run code"
	renovateWhy    = "Renovate opens pull requests by it, and its postUpgradeTasks run commands"
	gitHookWhy     = "git runs a file of this name as a hook when core.hooksPath names its directory"
	contentChanged = "%s %s: %s; %s"
	msbuildWhy     = "MSBuild imports it into every project below it on every build (Exec tasks run any command)"
)

// jsConfigWhy: a configuration file that is a program, run by who.
func jsConfigWhy(who string) string {
	return who + " runs it as code (it is a program, not a list of settings)"
}

// gitHookNames are the hooks githooks(5) lists: a file of one of these
// names is a hook in any directory core.hooksPath may name (hooks/,
// .hooks/, tools/git-hooks/...). "update" is left out: it runs only in a
// server's receive-pack, and it is the name of many an ordinary script
// (Rails' bin/update).
var gitHookNames = []string{
	"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
	"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
	"pre-push", "pre-receive", "proc-receive", "post-receive", "post-update",
	"reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
	"fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
	"post-index-change",
}

func compileRuns(rules []runsRule, hooks []string) []runsRule {
	for _, h := range hooks {
		rules = append(rules, runsRule{pattern: "**/" + h, code: FlagCI, why: gitHookWhy})
	}
	for i := range rules {
		r := &rules[i]
		if r.code == "" {
			r.code = FlagAutorun
		}
		if r.pattern != strings.ToLower(r.pattern) {
			panic("approval: runs pattern not lower-case: " + r.pattern)
		}
		g, err := glob.Compile(r.pattern)
		if err != nil {
			panic(err)
		}
		r.glob = g
	}
	return rules
}

// runsFlags is what the table says of one changed file: a flag for each
// kind of row that matches it (and, for a row about content, whose
// content changed).
func runsFlags(f FileChange, content Content) []Flag {
	var out []Flag
	for _, h := range runsHits(f, content) {
		out = append(out, h.flag)
	}
	return out
}

type runsHit struct {
	rule *runsRule
	flag Flag
}

func runsHits(f FileChange, content Content) []runsHit {
	comps := strings.Split(strings.ToLower(f.Path), "/")
	var out []runsHit
	var old, nu []byte
	read := false
	done := map[string]bool{}
	for i := range runsTable {
		r := &runsTable[i]
		// One flag of a kind per file: the first row that says why (a
		// hook of .husky/ is not flagged again for its name).
		if done[r.code] || !r.glob.Match(comps) {
			continue
		}
		var msg string
		if r.changed != nil {
			if !read {
				old, nu = side(content, f.Path, false), side(content, f.Path, true)
				read = true
			}
			what := r.changed(old, nu)
			if what == "" {
				continue
			}
			msg = fmt.Sprintf(contentChanged, verb(f.Op), f.Path, what, r.why)
		} else {
			msg = fmt.Sprintf("%s %s: %s", verb(f.Op), f.Path, r.why)
		}
		done[r.code] = true
		out = append(out, runsHit{r, Flag{Code: r.code, Severity: Medium, Path: f.Path, Message: msg}})
	}
	return out
}

// side is one side's content, nil when that side has none.
func side(content Content, p string, newSide bool) []byte {
	data, ok := content(p, newSide)
	if !ok {
		return nil
	}
	if data == nil {
		data = []byte{}
	}
	return data
}

func verb(op change.Kind) string {
	switch op {
	case change.Create:
		return "adds"
	case change.Delete:
		return "deletes"
	}
	return "changes"
}

// renamedAwayFlags are the flags a rename raises at the path it leaves:
// a workflow or hook renamed out of where it runs is turned off as surely
// as one deleted, so it is flagged as that deletion would be. The flag is
// on the file's new path, where a pick names it, and names both paths.
// A copy leaves its source in place and raises nothing here; a kind the
// new path already raised (here) is not raised twice.
func renamedAwayFlags(f FileChange, content Content, here []Flag) []Flag {
	if f.Op != change.Rename || f.From == "" || f.From == f.Path {
		return nil
	}
	gone := FileChange{Path: f.From, Op: change.Delete, OldMode: f.OldMode}
	// The request reads a rename's old side under its new path.
	old := func(p string, newSide bool) ([]byte, bool) {
		if newSide {
			return nil, false
		}
		return content(f.Path, false)
	}
	var out []Flag
	for _, h := range runsHits(gone, old) {
		fl := h.flag
		if hasFlag(here, fl.Code) {
			continue
		}
		fl.Path = f.Path
		fl.Message += fmt.Sprintf(" (renamed to %s)", f.Path)
		out = append(out, fl)
	}
	return out
}

func hasFlag(flags []Flag, code string) bool {
	for _, f := range flags {
		if f.Code == code {
			return true
		}
	}
	return false
}
