package main

// Every relative link of README.md and docs/*.md names a file that exists
// and, with a #fragment, a heading of that file (its anchor as GitHub
// makes it), so a reader following the runbook at 3 a.m. never lands on a
// section that moved.

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// markdownLink is an inline link or image: [text](target).
var markdownLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// sectionReference names a section in prose: docs/operations.md "Traffic
// controls", README, "Layout".
var sectionReference = regexp.MustCompile(`((?:[a-z-]+/)*(?:README|[a-z-]+)(?:\.md)?),? "([A-Z][^"]*)"`)

// fencedCode opens or closes a code block, whose text holds no links.
var fencedCode = regexp.MustCompile("^\\s*```")

// headingAnchors are the anchors GitHub gives the headings of a Markdown
// text: the heading lower-cased, its characters other than letters,
// digits, spaces, hyphens and underscores dropped, spaces made hyphens;
// a repeated anchor gets -1, -2, ... after it.
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inCode := false
	for _, line := range strings.Split(text, "\n") {
		if fencedCode.MatchString(line) {
			inCode = !inCode
			continue
		}
		if inCode || !strings.HasPrefix(line, "#") {
			continue
		}
		a := anchorOf(strings.TrimSpace(strings.TrimLeft(line, "#")))
		if n := seen[a]; n > 0 {
			anchors[a+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// anchorOf is the anchor of one heading's title.
func anchorOf(title string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r > 0x7f && isLetter(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isLetter(r rune) bool { return strings.ToLower(string(r)) != strings.ToUpper(string(r)) }

func TestDocsLinksResolve(t *testing.T) {
	t.Parallel()
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	files := append([]string{"README.md"}, docs...)
	anchorsOf := map[string]map[string]bool{}
	anchors := func(path string) (map[string]bool, error) {
		if a, ok := anchorsOf[path]; ok {
			return a, nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		anchorsOf[path] = headingAnchors(string(b))
		return anchorsOf[path], nil
	}
	checked := 0
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		inCode := false
		for n, line := range strings.Split(string(b), "\n") {
			if fencedCode.MatchString(line) {
				inCode = !inCode
			}
			if inCode {
				continue
			}
			for _, m := range sectionReference.FindAllStringSubmatch(line, -1) {
				name := m[1]
				if !strings.HasSuffix(name, ".md") {
					name += ".md"
				}
				dest := filepath.Join(filepath.Dir(file), filepath.Base(name))
				if filepath.Base(name) == "README.md" {
					dest = "README.md"
				}
				a, err := anchors(dest)
				if err != nil {
					continue // not a file of ours: a quotation
				}
				checked++
				if !a[anchorOf(m[2])] {
					t.Errorf("%s:%d: %s names a section %q that %s does not have", file, n+1, m[0], m[2], dest)
				}
			}
			for _, m := range markdownLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, fragment, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.Join(filepath.Dir(file), path)
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link to %s: no such file", file, n+1, target)
						continue
					}
				}
				checked++
				if fragment == "" {
					continue
				}
				if !strings.HasSuffix(dest, ".md") {
					t.Errorf("%s:%d: link to %s: a fragment of a file that is not Markdown", file, n+1, target)
					continue
				}
				a, err := anchors(dest)
				if err != nil {
					t.Errorf("%s:%d: %v", file, n+1, err)
					continue
				}
				if !a[fragment] {
					t.Errorf("%s:%d: link to %s: %s has no heading with that anchor", file, n+1, target, dest)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d links: did the link syntax change?", checked)
	}
}

func TestHeadingAnchors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, text, anchor string
	}{
		{"plain", "## Live status across replicas", "live-status-across-replicas"},
		{"punctuation dropped", "## Key rotation (session tokens, TOKEN_KEYS)", "key-rotation-session-tokens-token_keys"},
		{"code and slash", "## Batching: `[...]` array bodies", "batching--array-bodies"},
		{"repeat numbered", "## A\n## A", "a-1"},
		{"not in code", "```\n# not a heading\n```\n## Real", "real"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if a := headingAnchors(tc.text); !a[tc.anchor] {
				t.Errorf("anchors %v lack %q", a, tc.anchor)
			}
		})
	}
}
