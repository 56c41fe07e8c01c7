// Renders charts/nodeprof the way `helm template` does, without Helm: the same
// template engine (Go's text/template with sprig, missingkey=zero, the "<no value>"
// cleanup), the same extra functions (include, tpl, required, toYaml, fromYaml,
// toJson, fromJson, lookup), the same values handling (values.yaml coalesced with -f
// files: maps merged, null deletes a default), the same schema check
// (values.schema.json with gojsonschema, as Helm 3 up to 3.17), the same manifest
// splitting and kind ordering, and the same YAML library (sigs.k8s.io/yaml).
//
// Not implemented, and failing loudly when a template uses them: .Capabilities,
// .Files, .Subcharts, toToml, chart dependencies, hooks, --set. NOTES.txt is
// rendered like Helm renders it after an install.
//
// Usage: render [-f VALUES]... [--release-name N] [--namespace NS] [--format yaml|json]
//
//	[--namespace-object] [--skip-schema-validation] CHART_DIR
//
// yaml: what `helm template` prints. json: {"manifests": [{"source", "text",
// "object"}], "notes": "..."} with every object parsed as Kubernetes would (YAML to
// JSON through sigs.k8s.io/yaml). Exit status 1 with a message on stderr on any error.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig" // v3 (Debian installs it without the /v3 suffix)
	"github.com/xeipuuv/gojsonschema"
	"sigs.k8s.io/yaml"
)

// Metadata mirrors the fields of Helm's chart.Metadata that a template sees as .Chart.
type Metadata struct {
	Name         string            `json:"name,omitempty"`
	Home         string            `json:"home,omitempty"`
	Sources      []string          `json:"sources,omitempty"`
	Version      string            `json:"version,omitempty"`
	Description  string            `json:"description,omitempty"`
	Keywords     []string          `json:"keywords,omitempty"`
	Maintainers  []interface{}     `json:"maintainers,omitempty"`
	Icon         string            `json:"icon,omitempty"`
	APIVersion   string            `json:"apiVersion,omitempty"`
	Condition    string            `json:"condition,omitempty"`
	Tags         string            `json:"tags,omitempty"`
	AppVersion   string            `json:"appVersion,omitempty"`
	Deprecated   bool              `json:"deprecated,omitempty"`
	Annotations  map[string]string `json:"annotations,omitempty"`
	KubeVersion  string            `json:"kubeVersion,omitempty"`
	Dependencies []interface{}     `json:"dependencies,omitempty"`
	Type         string            `json:"type,omitempty"`
}

type valuesFiles []string

func (v *valuesFiles) String() string     { return strings.Join(*v, ",") }
func (v *valuesFiles) Set(s string) error { *v = append(*v, s); return nil }

func readValues(file string) (map[string]interface{}, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	vals := map[string]interface{}{}
	if err := yaml.Unmarshal(data, &vals); err != nil {
		return nil, fmt.Errorf("failed to parse %s: %w", file, err)
	}
	if vals == nil {
		vals = map[string]interface{}{}
	}
	return vals, nil
}

// mergeMaps is Helm's merge of several -f files: later files win, maps merge deeply.
func mergeMaps(a, b map[string]interface{}) map[string]interface{} {
	out := make(map[string]interface{}, len(a))
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		if vm, ok := v.(map[string]interface{}); ok {
			if bv, ok := out[k]; ok {
				if bvm, ok := bv.(map[string]interface{}); ok {
					out[k] = mergeMaps(bvm, vm)
					continue
				}
			}
		}
		out[k] = v
	}
	return out
}

func warn(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "warning: "+format+"\n", args...)
}

// coalesceValues is Helm's chartutil.coalesceValues: user values (v) win over the
// chart's defaults; a user null removes the default.
func coalesceValues(v, defaults map[string]interface{}, prefix string) {
	for key, val := range defaults {
		if value, ok := v[key]; ok {
			if value == nil {
				delete(v, key)
			} else if dest, ok := value.(map[string]interface{}); ok {
				src, ok := val.(map[string]interface{})
				if !ok {
					if val != nil {
						warn("skipped value for %s%s: Not a table.", prefix, key)
					}
				} else {
					coalesceTables(dest, src, prefix+key+".")
				}
			}
		} else {
			v[key] = val
		}
	}
}

// coalesceTables is Helm's coalesceTablesFullKey: dst has precedence over src.
func coalesceTables(dst, src map[string]interface{}, prefix string) {
	for key, val := range src {
		dv, ok := dst[key]
		if ok && dv == nil {
			delete(dst, key)
		} else if !ok {
			dst[key] = val
		} else if srcTable, isTable := val.(map[string]interface{}); isTable {
			if dstTable, ok := dv.(map[string]interface{}); ok {
				coalesceTables(dstTable, srcTable, prefix+key+".")
			} else {
				warn("cannot overwrite table with non table for %s%s (%v)", prefix, key, val)
			}
		} else if _, ok := dv.(map[string]interface{}); ok && val != nil {
			warn("destination for %s%s is a table. Ignoring non-table value (%v)", prefix, key, val)
		}
	}
}

// deepCopy copies the JSON-shaped values so coalescing never changes the defaults.
func deepCopy(v interface{}) interface{} {
	switch t := v.(type) {
	case map[string]interface{}:
		out := make(map[string]interface{}, len(t))
		for k, x := range t {
			out[k] = deepCopy(x)
		}
		return out
	case []interface{}:
		out := make([]interface{}, len(t))
		for i, x := range t {
			out[i] = deepCopy(x)
		}
		return out
	default:
		return v
	}
}

// validateSchema is Helm's ValidateAgainstSingleSchema (gojsonschema).
func validateSchema(chartName string, values map[string]interface{}, schema []byte) error {
	valuesYAML, err := yaml.Marshal(values)
	if err != nil {
		return err
	}
	valuesJSON, err := yaml.YAMLToJSON(valuesYAML)
	if err != nil {
		return err
	}
	if bytes.Equal(valuesJSON, []byte("null")) {
		valuesJSON = []byte("{}")
	}
	result, err := gojsonschema.Validate(gojsonschema.NewBytesLoader(schema), gojsonschema.NewBytesLoader(valuesJSON))
	if err != nil {
		return fmt.Errorf("values.schema.json: %w", err)
	}
	if result.Valid() {
		return nil
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "values don't meet the specifications of the schema(s) in the following chart(s):\n%s:\n", chartName)
	for _, desc := range result.Errors() {
		fmt.Fprintf(&sb, "- %s\n", desc)
	}
	return errors.New(sb.String())
}

// ---- template functions (Helm's pkg/engine/funcs.go) ----

func toYAML(v interface{}) string {
	data, err := yaml.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(str string) map[string]interface{} {
	m := map[string]interface{}{}
	if err := yaml.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

func toJSON(v interface{}) string {
	data, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(data)
}

func fromJSON(str string) map[string]interface{} {
	m := make(map[string]interface{})
	if err := json.Unmarshal([]byte(str), &m); err != nil {
		m["Error"] = err.Error()
	}
	return m
}

const recursionMax = 1000

type engine struct {
	tmpl     *template.Template
	included map[string]int
}

func (e *engine) funcs() template.FuncMap {
	f := sprig.TxtFuncMap()
	delete(f, "env")
	delete(f, "expandenv")
	f["toYaml"] = toYAML
	f["fromYaml"] = fromYAML
	f["toJson"] = toJSON
	f["fromJson"] = fromJSON
	f["include"] = func(name string, data interface{}) (string, error) {
		if e.included[name] > recursionMax {
			return "", fmt.Errorf("rendering template has a nested reference name: %s", name)
		}
		e.included[name]++
		defer func() { e.included[name]-- }()
		var buf strings.Builder
		err := e.tmpl.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	f["tpl"] = func(text string, vals map[string]interface{}) (string, error) {
		tmplInfo, _ := vals["Template"].(map[string]interface{})
		name, _ := tmplInfo["Name"].(string)
		if name == "" {
			return "", errors.New("tpl: .Template.Name is not set")
		}
		clone, err := e.tmpl.Clone()
		if err != nil {
			return "", err
		}
		if _, err := clone.New(name).Parse(text); err != nil {
			return "", fmt.Errorf("cannot parse template %q: %w", text, err)
		}
		var buf strings.Builder
		if err := clone.ExecuteTemplate(&buf, name, vals); err != nil {
			return "", fmt.Errorf("error during tpl function execution for %q: %w", text, err)
		}
		return strings.ReplaceAll(buf.String(), "<no value>", ""), nil
	}
	f["required"] = func(msg string, val interface{}) (interface{}, error) {
		if val == nil {
			return val, errors.New(msg)
		}
		if s, ok := val.(string); ok && s == "" {
			return val, errors.New(msg)
		}
		return val, nil
	}
	// helm template talks to no cluster: lookup finds nothing.
	f["lookup"] = func(string, string, string, string) (map[string]interface{}, error) {
		return map[string]interface{}{}, nil
	}
	return f
}

// ---- manifests (Helm's releaseutil) ----

var docSep = regexp.MustCompile(`(?:^|\s*\n)---\s*`)

// installOrder is Helm's releaseutil.InstallOrder.
var installOrder = []string{
	"PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
	"PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
	"PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole", "ClusterRoleList",
	"ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList",
	"Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
	"HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
}

type manifest struct {
	Source string                 `json:"source"`
	Text   string                 `json:"text"`
	Object map[string]interface{} `json:"object"`
	kind   string
}

func kindRank(kind string) (int, bool) {
	for i, k := range installOrder {
		if k == kind {
			return i, true
		}
	}
	return 0, false
}

func sortManifests(ms []manifest) {
	sort.SliceStable(ms, func(i, j int) bool {
		a, aok := kindRank(ms[i].kind)
		b, bok := kindRank(ms[j].kind)
		switch {
		case !aok && !bok:
			return ms[i].kind < ms[j].kind
		case !aok:
			return false
		case !bok:
			return true
		}
		return a < b
	})
}

func splitManifests(source, text string) ([]manifest, error) {
	var out []manifest
	for _, doc := range docSep.Split(strings.TrimSpace(text), -1) {
		doc = strings.TrimSpace(doc)
		if doc == "" {
			continue
		}
		var obj map[string]interface{}
		if err := yaml.Unmarshal([]byte(doc), &obj); err != nil {
			return nil, fmt.Errorf("YAML parse error on %s: %w", source, err)
		}
		if obj == nil {
			continue // only comments
		}
		kind, _ := obj["kind"].(string)
		if _, ok := obj["apiVersion"].(string); !ok || kind == "" {
			return nil, fmt.Errorf("%s: a document without apiVersion and kind:\n%s", source, doc)
		}
		out = append(out, manifest{Source: source, Text: doc, Object: obj, kind: kind})
	}
	return out, nil
}

// ---- main ----

type options struct {
	values          valuesFiles
	releaseName     string
	namespace       string
	format          string
	namespaceObject bool
	skipSchema      bool
	chartDir        string
}

func loadChart(dir string) (*Metadata, map[string]interface{}, []byte, error) {
	var meta Metadata
	data, err := os.ReadFile(filepath.Join(dir, "Chart.yaml"))
	if err != nil {
		return nil, nil, nil, err
	}
	if err := yaml.Unmarshal(data, &meta); err != nil {
		return nil, nil, nil, fmt.Errorf("Chart.yaml: %w", err)
	}
	if meta.APIVersion != "v2" || meta.Name == "" || meta.Version == "" {
		return nil, nil, nil, errors.New("Chart.yaml: apiVersion v2, name and version are required")
	}
	if len(meta.Dependencies) > 0 {
		return nil, nil, nil, errors.New("Chart.yaml: dependencies are not supported by this renderer")
	}
	defaults, err := readValues(filepath.Join(dir, "values.yaml"))
	if err != nil {
		return nil, nil, nil, err
	}
	schema, err := os.ReadFile(filepath.Join(dir, "values.schema.json"))
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, nil, err
	}
	return &meta, defaults, schema, nil
}

func run(o options) error {
	meta, defaults, schema, err := loadChart(o.chartDir)
	if err != nil {
		return err
	}
	user := map[string]interface{}{}
	for _, f := range o.values {
		v, err := readValues(f)
		if err != nil {
			return err
		}
		user = mergeMaps(user, v)
	}
	values := deepCopy(user).(map[string]interface{})
	coalesceValues(values, deepCopy(defaults).(map[string]interface{}), "")
	if schema != nil && !o.skipSchema {
		if err := validateSchema(meta.Name, values, schema); err != nil {
			return err
		}
	}

	// Templates are named "<chart>/templates/<file>", as Helm names them.
	tdir := filepath.Join(o.chartDir, "templates")
	entries, err := os.ReadDir(tdir)
	if err != nil {
		return err
	}
	e := &engine{included: map[string]int{}}
	e.tmpl = template.New("gotpl").Option("missingkey=zero")
	e.tmpl.Funcs(e.funcs())
	var names []string
	for _, ent := range entries {
		if ent.IsDir() {
			return fmt.Errorf("templates/%s: sub-directories are not supported by this renderer", ent.Name())
		}
		name := path.Join(meta.Name, "templates", ent.Name())
		text, err := os.ReadFile(filepath.Join(tdir, ent.Name()))
		if err != nil {
			return err
		}
		if _, err := e.tmpl.New(name).Parse(string(text)); err != nil {
			return fmt.Errorf("parse error in %s: %w", name, err)
		}
		names = append(names, name)
	}
	sort.Strings(names)

	top := map[string]interface{}{
		"Values": values,
		"Release": map[string]interface{}{
			"Name": o.releaseName, "Namespace": o.namespace, "IsUpgrade": false, "IsInstall": true,
			"Revision": 1, "Service": "Helm",
		},
		"Chart": meta,
	}
	var manifests []manifest
	notes := ""
	for _, name := range names {
		if strings.HasPrefix(path.Base(name), "_") {
			continue
		}
		top["Template"] = map[string]interface{}{"Name": name, "BasePath": path.Join(meta.Name, "templates")}
		var buf strings.Builder
		if err := e.tmpl.ExecuteTemplate(&buf, name, top); err != nil {
			return fmt.Errorf("execution error in %s: %w", name, err)
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if strings.HasSuffix(name, "NOTES.txt") {
			notes = text
			continue
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if !strings.HasSuffix(name, ".yaml") && !strings.HasSuffix(name, ".yml") && !strings.HasSuffix(name, ".tpl") {
			return fmt.Errorf("%s: only .yaml templates are supported by this renderer", name)
		}
		ms, err := splitManifests(name, text)
		if err != nil {
			return err
		}
		manifests = append(manifests, ms...)
	}
	sortManifests(manifests)
	if o.namespaceObject {
		ns := manifest{
			Source: "namespace (not part of the chart: what helm install --create-namespace creates)",
			Text:   "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + o.namespace,
			Object: map[string]interface{}{"apiVersion": "v1", "kind": "Namespace",
				"metadata": map[string]interface{}{"name": o.namespace}},
		}
		manifests = append([]manifest{ns}, manifests...)
	}

	if o.format == "json" {
		out := map[string]interface{}{"manifests": manifests, "notes": notes}
		enc := json.NewEncoder(os.Stdout)
		enc.SetEscapeHTML(false)
		return enc.Encode(out)
	}
	var sb strings.Builder
	for _, m := range manifests {
		fmt.Fprintf(&sb, "---\n# Source: %s\n%s\n", m.Source, m.Text)
	}
	_, err = os.Stdout.WriteString(sb.String())
	return err
}

func main() {
	var o options
	flag.Var(&o.values, "f", "a values file (YAML or JSON); repeatable, later files win")
	flag.StringVar(&o.releaseName, "release-name", "nodeprof", "the release name")
	flag.StringVar(&o.namespace, "namespace", "default", "the release namespace")
	flag.StringVar(&o.format, "format", "yaml", "yaml (as helm template prints) or json")
	flag.BoolVar(&o.namespaceObject, "namespace-object", false, "put a Namespace object first")
	flag.BoolVar(&o.skipSchema, "skip-schema-validation", false, "as helm's flag of that name")
	flag.Parse()
	if flag.NArg() != 1 || (o.format != "yaml" && o.format != "json") {
		fmt.Fprintln(os.Stderr, "usage: render [-f VALUES]... [--release-name N] [--namespace NS] [--format yaml|json] [--namespace-object] [--skip-schema-validation] CHART_DIR")
		os.Exit(2)
	}
	o.chartDir = flag.Arg(0)
	if err := run(o); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}
