package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// readmeBlock is a shell block of README.md marked to be run by the tests
// ("```sh readme-test"), with the strings its output must contain (an HTML
// comment just before it: <!-- readme-test: output contains "a" b -->).
type readmeBlock struct {
	line   int // of the opening fence
	script string
	expect []string
}

// readmeBlocks extracts the runnable blocks of a Markdown file.
func readmeBlocks(t *testing.T, path string) []readmeBlock {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var (
		blocks  []readmeBlock
		cur     *readmeBlock
		pending []string
		n       int
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case cur != nil && strings.TrimSpace(line) == "```":
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.script += line + "\n"
		case strings.TrimSpace(line) == "```sh readme-test":
			cur = &readmeBlock{line: n, expect: pending}
			pending = nil
		case strings.HasPrefix(line, "<!-- readme-test: output contains "):
			spec := strings.TrimSuffix(strings.TrimPrefix(line, "<!-- readme-test: output contains "), " -->")
			for _, tok := range strings.Fields(spec) {
				if len(tok) >= 2 && strings.HasPrefix(tok, `"`) && strings.HasSuffix(tok, `"`) && strings.Count(tok, `"`) == 2 {
					tok = tok[1 : len(tok)-1]
				}
				pending = append(pending, tok)
			}
		case strings.TrimSpace(line) != "":
			pending = nil // an expectation belongs to the block right after it
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if cur != nil {
		t.Fatalf("%s:%d: the block is not closed", path, cur.line)
	}
	return blocks
}

// TestReadmeQuickStart runs every "```sh readme-test" block of README.md, in
// order, against one fresh tsdb serve on an embedded store, as a user pasting
// them into a shell would (with the server's address for localhost:9201): each
// must exit 0 and print what its readme-test comment says.
func TestReadmeQuickStart(t *testing.T) {
	if _, err := exec.LookPath("curl"); err != nil {
		t.Fatalf("the README's examples use curl: %v", err)
	}
	blocks := readmeBlocks(t, "../../README.md")
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d readme-test blocks; the quick start and the /api/put example should be", len(blocks))
	}
	s := startServe(t, "--storage=embedded:"+t.TempDir())
	s.waitFor(t, "/-/ready", 200)
	for _, b := range blocks {
		script := strings.ReplaceAll(b.script, "localhost:9201", s.addr)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		out, err := exec.CommandContext(ctx, "bash", "-euo", "pipefail", "-c", script).CombinedOutput()
		cancel()
		if err != nil {
			t.Errorf("README.md:%d: the block failed (%v); output:\n%s\nscript:\n%s", b.line, err, out, script)
			continue
		}
		for _, want := range b.expect {
			if !strings.Contains(string(out), want) {
				t.Errorf("README.md:%d: the output lacks %q; output:\n%s", b.line, want, out)
			}
		}
	}
}
