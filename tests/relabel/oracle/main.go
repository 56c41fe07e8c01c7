// Reference oracle for the relabel engine's Go semantics: Go's own regexp
// (FindStringSubmatchIndex, Expand, ReplaceAllString on Prometheus' anchored
// "^(?s:RE)$"), strings.ToLower/ToUpper, strconv.Quote and unicode.SimpleFold.
// tests/integration/test_relabel_oracle.py feeds the same requests to this program
// and to build/relabel/oracle_harness (the C engine) and compares the answers.
//
// Protocol: one JSON request per line on stdin, one JSON answer per line on stdout.
// Strings travel hex-encoded, because label values need not be valid UTF-8.
//
//	{"op":"match","re":H,"subjects":[H...],"tmpls":[H...]}
//	  -> {"err":S|null,"results":[{"m":[int...]|null,"exp":[H...],"rall":[H...],"match":bool}]}
//	{"op":"str","s":H} -> {"lower":H,"upper":H,"quote":H}
//	{"op":"cases","from":N,"to":N} -> {"cps":[[cp,lower,upper]...]} (assigned code points only)
//	{"op":"fold","from":N,"to":N} -> {"orbits":[[cp,orbit...]...]} (code points with an orbit)
//	{"op":"process",...}: a whole rule list on targets (process.go; plain JSON strings)
package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

type request struct {
	Op       string              `json:"op"`
	Re       string              `json:"re"`
	Subjects []string            `json:"subjects"`
	Tmpls    []string            `json:"tmpls"`
	S        string              `json:"s"`
	From     int                 `json:"from"`
	To       int                 `json:"to"`
	Rules    []rule              `json:"rules"`
	Targets  []map[string]string `json:"targets"`
}

type result struct {
	M     []int    `json:"m"`
	Exp   []string `json:"exp"`
	Rall  []string `json:"rall"`
	Match bool     `json:"match"`
}

func unhex(s string) string {
	b, err := hex.DecodeString(s)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func enc(s string) string { return hex.EncodeToString([]byte(s)) }

func assigned(r rune) bool {
	for _, t := range []*unicode.RangeTable{unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf, unicode.Co} {
		if unicode.Is(t, r) {
			return true
		}
	}
	return false
}

func main() {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 64<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	encoder := json.NewEncoder(out)
	for in.Scan() {
		var req request
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			panic(err)
		}
		switch req.Op {
		case "match":
			re, err := regexp.Compile("^(?s:" + unhex(req.Re) + ")$")
			if err != nil {
				encoder.Encode(map[string]interface{}{"err": err.Error()})
				continue
			}
			var results []result
			for _, hs := range req.Subjects {
				s := unhex(hs)
				var r result
				r.M = re.FindStringSubmatchIndex(s)
				r.Match = re.MatchString(s)
				for _, ht := range req.Tmpls {
					t := unhex(ht)
					if r.M != nil {
						r.Exp = append(r.Exp, enc(string(re.ExpandString(nil, t, s, r.M))))
					}
					r.Rall = append(r.Rall, enc(re.ReplaceAllString(s, t)))
				}
				results = append(results, r)
			}
			encoder.Encode(map[string]interface{}{"err": nil, "results": results})
		case "str":
			s := unhex(req.S)
			encoder.Encode(map[string]string{"lower": enc(strings.ToLower(s)), "upper": enc(strings.ToUpper(s)),
				"quote": enc(strconv.Quote(s))})
		case "cases":
			var cps [][3]int
			for r := rune(req.From); r <= rune(req.To); r++ {
				if assigned(r) {
					cps = append(cps, [3]int{int(r), int(unicode.ToLower(r)), int(unicode.ToUpper(r))})
				}
			}
			encoder.Encode(map[string]interface{}{"cps": cps})
		case "fold":
			var orbits [][]int
			for r := rune(req.From); r <= rune(req.To); r++ {
				if !assigned(r) {
					continue
				}
				orbit := []int{int(r)}
				for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
					orbit = append(orbit, int(f))
				}
				if len(orbit) > 1 {
					sort.Ints(orbit)
					orbits = append(orbits, append([]int{int(r)}, orbit...))
				}
			}
			encoder.Encode(map[string]interface{}{"orbits": orbits})
		case "process":
			encoder.Encode(process(req.Rules, req.Targets))
		default:
			panic("unknown op " + req.Op)
		}
	}
}
