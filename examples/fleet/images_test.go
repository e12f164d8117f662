package fleet_test

import (
	"os"
	"regexp"
	"testing"
)

// TestImagesMatchTheModules keeps the example's images at the versions
// the repository builds and tests with: the Dockerfile's Go at go.mod's
// go line, and compose.yaml's NATS server at the nats-server module whose
// parser and server the tests here run on the example's files.
func TestImagesMatchTheModules(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	gomod, dockerfile, compose := read("../../go.mod"), read("Dockerfile"), read("compose.yaml")
	for _, c := range []struct {
		what          string
		image, module *regexp.Regexp
		imageText     string
	}{
		{"Go", regexp.MustCompile(`(?m)^FROM golang:(\d+\.\d+)\b`), regexp.MustCompile(`(?m)^go (\d+\.\d+)`), dockerfile},
		{"nats-server", regexp.MustCompile(`(?m)^\s*image: nats:(\d+\.\d+)-alpine$`),
			regexp.MustCompile(`(?m)^\s*github\.com/nats-io/nats-server/v2 v(\d+\.\d+)\.`), compose},
	} {
		img, mod := c.image.FindStringSubmatch(c.imageText), c.module.FindStringSubmatch(gomod)
		if img == nil || mod == nil {
			t.Fatalf("%s: no version found (image %v, go.mod %v)", c.what, img, mod)
		}
		if img[1] != mod[1] {
			t.Errorf("%s: the example's image is %s, go.mod's is %s: move them together", c.what, img[1], mod[1])
		}
	}
}
