package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/alecthomas/kingpin/v2"
)

// Kingpin's parse errors that name a word the user mistyped. The texts are
// kingpin v2.4.0's (parser.go and app.go); a test pins them, so an upgrade that
// changes them fails there rather than silently losing the suggestions.
var (
	unknownFlagError    = regexp.MustCompile(`^unknown long flag '--([^']*)'$`)
	unknownCommandError = regexp.MustCompile(`^expected command but got "([^"]*)"$`)
)

// explainParseError rewrites a kingpin parse error for a person: an unknown flag
// or command gets the closest known ones as a "did you mean" hint. args are the
// arguments that were parsed, to tell which command the word was given to.
func explainParseError(model *kingpin.ApplicationModel, args []string, err error) error {
	msg := err.Error()
	if m := unknownFlagError.FindStringSubmatch(msg); m != nil {
		name, _, _ := strings.Cut(m[1], "=")
		if hint := didYouMean("--"+name, prefixed("--", flagNames(model, commandPath(model, args)))); hint != "" {
			return fmt.Errorf("unknown flag --%s; %s", name, hint)
		}
		return fmt.Errorf("unknown flag --%s", name)
	}
	if m := unknownCommandError.FindStringSubmatch(msg); m != nil {
		cmds := commandNames(model, commandPath(model, args))
		if hint := didYouMean(m[1], cmds); hint != "" {
			return fmt.Errorf("unknown command %q; %s", m[1], hint)
		}
		return fmt.Errorf("unknown command %q; the commands are %s", m[1], strings.Join(cmds, ", "))
	}
	return err
}

// commandPath is the chain of commands the arguments select, outermost first
// (e.g. schema, create), as far as the arguments name known commands.
func commandPath(model *kingpin.ApplicationModel, args []string) []*kingpin.CmdModel {
	var path []*kingpin.CmdModel
	cmds := model.Commands
	for _, a := range args {
		if strings.HasPrefix(a, "-") {
			continue
		}
		i := slices.IndexFunc(cmds, func(c *kingpin.CmdModel) bool { return c.Name == a })
		if i < 0 {
			break
		}
		path = append(path, cmds[i])
		cmds = cmds[i].Commands
	}
	return path
}

// flagNames are the flags valid after the command path: the application's and
// those of every command on the path. With no command given, every command's
// flags count too (a flag may be given before its command).
func flagNames(model *kingpin.ApplicationModel, path []*kingpin.CmdModel) []string {
	var names []string
	add := func(flags []*kingpin.FlagModel) {
		for _, f := range flags {
			if !f.Hidden {
				names = append(names, f.Name)
			}
		}
	}
	add(model.Flags)
	if len(path) == 0 {
		var walk func([]*kingpin.CmdModel)
		walk = func(cmds []*kingpin.CmdModel) {
			for _, c := range cmds {
				add(c.Flags)
				walk(c.Commands)
			}
		}
		walk(model.Commands)
	}
	for _, c := range path {
		add(c.Flags)
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// commandNames are the commands that may follow the command path.
func commandNames(model *kingpin.ApplicationModel, path []*kingpin.CmdModel) []string {
	cmds := model.Commands
	if len(path) > 0 {
		cmds = path[len(path)-1].Commands
	}
	var names []string
	for _, c := range cmds {
		if !c.Hidden {
			names = append(names, c.Name)
		}
	}
	return names
}

func prefixed(prefix string, names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = prefix + n
	}
	return out
}

// didYouMean names the candidates closest to word — by edit distance, at most a
// third of the word's length (and at least 2), or those word begins, or ends after
// a dot (--rpc-timeout for --hbase.rpc-timeout) — as
// "did you mean X?" or "did you mean X or Y?"; "" when none is close.
func didYouMean(word string, candidates []string) string {
	best, bestDist := []string(nil), 0
	limit := max(2, len(word)/3)
	for _, c := range candidates {
		d := editDistance(word, c)
		if len(word) >= 3 && (strings.HasPrefix(c, word) || strings.HasSuffix(c, "."+strings.TrimLeft(word, "-"))) {
			d = min(d, 1) // a beginning, or a flag without its group (--rpc-timeout)
		}
		switch {
		case d > limit:
		case best == nil || d < bestDist:
			best, bestDist = []string{c}, d
		case d == bestDist:
			best = append(best, c)
		}
	}
	switch {
	case len(best) == 0:
		return ""
	case len(best) > 3:
		best = best[:3]
	}
	if len(best) == 1 {
		return fmt.Sprintf("did you mean %s?", best[0])
	}
	return fmt.Sprintf("did you mean %s or %s?", strings.Join(best[:len(best)-1], ", "), best[len(best)-1])
}

// editDistance is the Levenshtein distance of a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
