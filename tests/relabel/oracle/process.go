// The expected result of a whole rule list on a target, written from Prometheus'
// documented relabeling semantics (docs/specs/relabel.md §§1-8) and the
// validation of Alloy's relabel rule block (grafana/alloy
// internal/component/common/relabel Config.Validate), on Go's own regexp, strings and
// crypto/md5. tests/integration/test_relabel_differential.py compares it with
// `nodeprof tools relabel`.
//
//	{"op":"process","rules":[{field: value, ...}],"targets":[{name: value}...]}
//	  -> {"err": S|null, "out": [{name: value}...], "ambiguous": bool}
//
// A rule object holds the fields the rule writes (absent = Alloy's default).
// "ambiguous" is set when a labelmap rule writes one name twice with different values:
// Prometheus leaves that order to the label builder (docs/specs/relabel.md §5), so no answer is the one.
package main

import (
	"crypto/md5"
	"encoding/binary"
	"fmt"
	"regexp"
	"strings"
	"unicode/utf8"
)

type rule struct {
	SourceLabels *[]string `json:"source_labels"`
	Separator    *string   `json:"separator"`
	Regex        *string   `json:"regex"`
	Modulus      *uint64   `json:"modulus"`
	TargetLabel  *string   `json:"target_label"`
	Replacement  *string   `json:"replacement"`
	Action       *string   `json:"action"`
}

type compiled struct {
	sources              []string
	sep, target, repl    string
	re                   *regexp.Regexp
	regexWritten         string
	hasRegex, hasSources bool
	mod                  uint64
	action               string
}

var legacyTemplate = regexp.MustCompile(`^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$`)

func validName(s string) bool { return s != "" && utf8.ValidString(s) }

func str(p *string, def string) string {
	if p == nil {
		return def
	}
	return *p
}

// compileRule applies Alloy's defaults, decoding and Config.Validate (messages verbatim).
func compileRule(r rule) (*compiled, error) {
	c := &compiled{sep: str(r.Separator, ";"), target: str(r.TargetLabel, ""), repl: str(r.Replacement, "$1"),
		action: str(r.Action, "replace")}
	if r.SourceLabels != nil {
		c.sources = *r.SourceLabels
		c.hasSources = true
	}
	if r.Modulus != nil {
		c.mod = *r.Modulus
	}
	c.regexWritten = str(r.Regex, "(.*)")
	c.hasRegex = r.Regex != nil
	re, err := regexp.Compile("^(?s:" + c.regexWritten + ")$")
	if err != nil {
		return nil, err
	}
	c.re = re
	switch c.action {
	case "replace", "keep", "drop", "hashmod", "labelmap", "labeldrop", "labelkeep", "lowercase", "uppercase",
		"keepequal", "dropequal":
	default:
		return nil, fmt.Errorf("unrecognized action type %q", c.action)
	}
	a := c.action
	if a == "hashmod" && c.mod == 0 {
		return nil, fmt.Errorf("relabel configuration for hashmod requires non-zero modulus")
	}
	if (a == "replace" || a == "hashmod" || a == "lowercase" || a == "uppercase" || a == "keepequal" ||
		a == "dropequal") && c.target == "" {
		return nil, fmt.Errorf("relabel configuration for %s action requires 'target_label' value", a)
	}
	if a == "replace" && !strings.Contains(c.target, "$") && !validName(c.target) {
		return nil, fmt.Errorf("%q is invalid 'target_label' for %s action", c.target, a)
	}
	if a == "replace" && strings.Contains(c.target, "$") && !legacyTemplate.MatchString(c.target) {
		return nil, fmt.Errorf("%q is invalid 'target_label' for %s action", c.target, a)
	}
	if (a == "lowercase" || a == "uppercase" || a == "keepequal" || a == "dropequal") && !validName(c.target) {
		return nil, fmt.Errorf("%q is invalid 'target_label' for %s action", c.target, a)
	}
	if (a == "lowercase" || a == "uppercase" || a == "keepequal" || a == "dropequal") && c.repl != "$1" {
		return nil, fmt.Errorf("'replacement' can not be set for %s action", a)
	}
	if a == "labelmap" && !legacyTemplate.MatchString(c.repl) {
		return nil, fmt.Errorf("%q is invalid 'replacement' for %s action", c.repl, a)
	}
	if a == "hashmod" && !validName(c.target) {
		return nil, fmt.Errorf("%q is invalid 'target_label' for %s action", c.target, a)
	}
	if (a == "labeldrop" || a == "labelkeep") &&
		(c.hasSources || c.target != "" || c.mod != 0 || c.sep != ";" || c.repl != "$1") {
		return nil, fmt.Errorf("%s action requires only 'regex', and no other fields", a)
	}
	if (a == "keepequal" || a == "dropequal") &&
		(c.regexWritten != "(.*)" || c.mod != 0 || c.sep != ";" || c.repl != "$1") {
		return nil, fmt.Errorf("%s action requires only 'source_labels' and 'target_label', and no other fields", a)
	}
	return c, nil
}

// apply runs one rule on ls (empty value = absent); false drops the target.
func apply(c *compiled, ls map[string]string, ambiguous *bool) bool {
	set := func(n, v string) {
		if v == "" {
			delete(ls, n)
		} else {
			ls[n] = v
		}
	}
	vals := make([]string, len(c.sources))
	for i, n := range c.sources {
		vals[i] = ls[n]
	}
	val := strings.Join(vals, c.sep)
	switch c.action {
	case "drop":
		return !c.re.MatchString(val)
	case "keep":
		return c.re.MatchString(val)
	case "dropequal":
		return ls[c.target] != val
	case "keepequal":
		return ls[c.target] == val
	case "replace":
		m := c.re.FindStringSubmatchIndex(val)
		if m == nil {
			break
		}
		t := string(c.re.ExpandString(nil, c.target, val, m))
		if !validName(t) {
			break
		}
		set(t, string(c.re.ExpandString(nil, c.repl, val, m)))
	case "lowercase":
		set(c.target, strings.ToLower(val))
	case "uppercase":
		set(c.target, strings.ToUpper(val))
	case "hashmod":
		h := md5.Sum([]byte(val))
		set(c.target, fmt.Sprintf("%d", binary.BigEndian.Uint64(h[8:])%c.mod))
	case "labelmap":
		snapshot := map[string]string{}
		for n, v := range ls {
			snapshot[n] = v
		}
		written := map[string]string{}
		for n, v := range snapshot {
			if !c.re.MatchString(n) {
				continue
			}
			nn := c.re.ReplaceAllString(n, c.repl)
			if old, ok := written[nn]; ok && old != v {
				*ambiguous = true
			}
			written[nn] = v
			set(nn, v)
		}
	case "labeldrop", "labelkeep":
		for n := range ls {
			if c.re.MatchString(n) == (c.action == "labeldrop") {
				delete(ls, n)
			}
		}
	}
	return true
}

func process(rules []rule, targets []map[string]string) map[string]interface{} {
	var cs []*compiled
	for i, r := range rules {
		c, err := compileRule(r)
		if err != nil {
			return map[string]interface{}{"err": fmt.Sprintf("rule %d: %s", i+1, err)}
		}
		cs = append(cs, c)
	}
	out := []map[string]string{}
	ambiguous := false
	for _, t := range targets {
		ls := map[string]string{}
		for n, v := range t {
			if v != "" {
				ls[n] = v
			}
		}
		keep := true
		for _, c := range cs {
			if keep = apply(c, ls, &ambiguous); !keep {
				break
			}
		}
		if keep {
			out = append(out, ls)
		}
	}
	return map[string]interface{}{"err": nil, "out": out, "ambiguous": ambiguous}
}
