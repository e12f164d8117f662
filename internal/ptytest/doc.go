// Package ptytest runs commands in a pseudo-terminal for tests, as a
// person at a terminal would: keys typed in, the screen read back.
package ptytest
