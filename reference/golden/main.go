// Command golden writes what Go's libraries answer for inputs apfkit ports their behaviour
// for, as test data the Rust tests hold apfkit's ports to:
//
//	golden yaml < values.jsonl      one JSON value a line in; a line [value, yaml] out, the
//	                                yaml as gnostic's compiler.Marshal writes an Any's
//	golden gnostic < swagger.json   an OpenAPI v2 document in; its protobuf out, as
//	                                kube-openapi's handler.ToProtoBinary writes it
//	golden labels < selectors.jsonl one JSON string a line in; a line [selector, error,
//	                                parsed] out, as apimachinery's labels.Parse answers
//	                                (error null when it parses, parsed its String())
//	golden fields < selectors.jsonl the same for fields.ParseSelector
//	golden json < documents.jsonl   one JSON string a line in, holding a document's text; a
//	                                line [text, error, offset] out: the syntax error Go's
//	                                decoder (sigs.k8s.io/json, as kube-apiserver decodes)
//	                                answers and its offset, or null and 0
//	golden times < values.jsonl     one JSON string a line in; a line [value, error] out: what
//	                                apimachinery's Time answers for it as a JSON string
//	golden microtimes < values.jsonl the same for apimachinery's MicroTime
//	golden gotypes                  the Go types of the kinds apfkit serves as Go's JSON decoder
//	                                sees them (apiserver/data/go-types.json): each type's
//	                                kind, its name as errors print it, struct fields by JSON
//	                                name (with those tagged omitempty and the pointers),
//	                                elements, and the decoders of its own it has
//	golden golayouts                how the Go structs of the kinds apfkit-corekinds and
//	                                apfkit-namespaces serve are laid out (types/data/
//	                                core-go-layouts.json), by OpenAPI definition name: each
//	                                field in Go's order with its JSON name, protobuf field
//	                                number, pointer, omitempty and omitzero; what the
//	                                generator's `x-apfkit-go` extension holds
//	golden swaggerdoc               the SwaggerDoc() of the Go types whose fields kube-apiserver's
//	                                printers describe their columns with, by OpenAPI definition
//	                                name (apiserver/data/swagger-doc.json)
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"sort"
	"strings"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	rbacv1beta1 "k8s.io/api/rbac/v1beta1"
	storagemigrationv1 "k8s.io/api/storagemigration/v1"
	storagemigrationv1beta1 "k8s.io/api/storagemigration/v1beta1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/kube-openapi/pkg/handler"
	sigsjson "sigs.k8s.io/json"
)

func main() {
	if len(os.Args) != 2 {
		fail(fmt.Errorf("usage: golden yaml|gnostic|json|labels|fields|swaggerdoc|gotypes|golayouts|times|microtimes"))
	}
	switch os.Args[1] {
	case "yaml":
		yamlLines()
	case "gnostic":
		in, err := io.ReadAll(os.Stdin)
		if err != nil {
			fail(err)
		}
		out, err := handler.ToProtoBinary(in)
		if err != nil {
			fail(err)
		}
		os.Stdout.Write(out)
	case "json":
		jsonLines()
	case "swaggerdoc":
		swaggerDocs()
	case "gotypes":
		goTypes()
	case "golayouts":
		goLayouts()
	case "times":
		timeLines(func(value []byte) error { var t metav1.Time; return t.UnmarshalJSON(value) })
	case "microtimes":
		timeLines(func(value []byte) error { var t metav1.MicroTime; return t.UnmarshalJSON(value) })
	case "labels":
		selectorLines(func(text string) (fmt.Stringer, error) { return labels.Parse(text) })
	case "fields":
		selectorLines(func(text string) (fmt.Stringer, error) { return fields.ParseSelector(text) })
	default:
		fail(fmt.Errorf("unknown mode %q", os.Args[1]))
	}
}

// goType is one Go type as encoding/json decodes into it.
type goType struct {
	// Kind: struct, string, int, uint, float, bool, slice, map, any (anything decodes:
	// interfaces, RawExtension, apiextensions' JSON), or custom (an UnmarshalJSON of its own,
	// named by Custom).
	Kind string `json:"kind"`
	// Name as Go's errors print it (reflect's Type.String): "int32", "v1.FlowSchemaSpec".
	Name string `json:"name"`
	// Struct is a struct's bare name, which errors print before a field's path.
	Struct string `json:"struct,omitempty"`
	// Fields of a struct by JSON name (promoted fields of inline structs included): the key
	// of each field's type.
	Fields map[string]string `json:"fields,omitempty"`
	// Elem of a slice or map, or what a custom decoder decodes into when it delegates.
	Elem   string `json:"elem,omitempty"`
	Bits   int    `json:"bits,omitempty"`
	Custom string `json:"custom,omitempty"`
	// Omit names a struct's fields tagged omitempty, Pointers those whose Go type is a
	// pointer: what Go's encoder writes of a field left empty (sorted JSON names).
	Omit     []string `json:"omit,omitempty"`
	Pointers []string `json:"pointers,omitempty"`
}

var unmarshaler = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// goTypes writes the decoder's view of every served kind's type, keyed by package path and
// name (several packages are called v1), with the roots by apiVersion and kind.
func goTypes() {
	roots := map[string]any{
		"flowcontrol.apiserver.k8s.io/v1/FlowSchema":                 flowcontrolv1.FlowSchema{},
		"flowcontrol.apiserver.k8s.io/v1/PriorityLevelConfiguration": flowcontrolv1.PriorityLevelConfiguration{},
		"v1/Service":                               corev1.Service{},
		"v1/Namespace":                             corev1.Namespace{},
		"v1/ConfigMap":                             corev1.ConfigMap{},
		"v1/Secret":                                corev1.Secret{},
		"v1/ServiceAccount":                        corev1.ServiceAccount{},
		"v1/Event":                                 corev1.Event{},
		"events.k8s.io/v1/Event":                   eventsv1.Event{},
		"coordination.k8s.io/v1/Lease":             coordinationv1.Lease{},
		"discovery.k8s.io/v1/EndpointSlice":        discoveryv1.EndpointSlice{},
		"rbac.authorization.k8s.io/v1/ClusterRole": rbacv1.ClusterRole{},
		"rbac.authorization.k8s.io/v1/ClusterRoleBinding":    rbacv1.ClusterRoleBinding{},
		"rbac.authorization.k8s.io/v1/Role":                  rbacv1.Role{},
		"rbac.authorization.k8s.io/v1/RoleBinding":           rbacv1.RoleBinding{},
		"apiextensions.k8s.io/v1/CustomResourceDefinition":   apiextensionsv1.CustomResourceDefinition{},
		"apiregistration.k8s.io/v1/APIService":               apiregistrationv1.APIService{},
		"storagemigration.k8s.io/v1/StorageVersionMigration": storagemigrationv1.StorageVersionMigration{},
		// The version kube-apiserver 1.37 stores them in.
		"storagemigration.k8s.io/v1beta1/StorageVersionMigration": storagemigrationv1beta1.StorageVersionMigration{},
	}
	types := map[string]goType{}
	var key func(t reflect.Type) string
	key = func(t reflect.Type) string {
		for t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		// Named types by package path (several packages are called v1); unnamed slices and
		// maps by their element's key, which may be named in any of them.
		k := t.String()
		switch {
		case t.PkgPath() != "":
			k = t.PkgPath() + "." + t.Name()
		case t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8:
			k = "[]" + key(t.Elem())
		case t.Kind() == reflect.Map:
			k = "map[" + t.Key().String() + "]" + key(t.Elem())
		}
		if _, seen := types[k]; seen {
			return k
		}
		node := goType{Name: t.String()}
		types[k] = node
		switch {
		case reflect.PointerTo(t).Implements(unmarshaler):
			node.Kind = "custom"
			node.Custom = t.String()
		case t.Kind() == reflect.Struct:
			node.Kind = "struct"
			node.Struct = t.Name()
			node.Fields = map[string]string{}
			var walk func(s reflect.Type)
			walk = func(s reflect.Type) {
				for i := 0; i < s.NumField(); i++ {
					f := s.Field(i)
					tag := f.Tag.Get("json")
					name, _, _ := strings.Cut(tag, ",")
					if tag == "-" || (!f.IsExported() && !f.Anonymous) {
						continue
					}
					if f.Anonymous && name == "" {
						inner := f.Type
						for inner.Kind() == reflect.Pointer {
							inner = inner.Elem()
						}
						if inner.Kind() == reflect.Struct {
							walk(inner)
							continue
						}
					}
					if name == "" {
						name = f.Name
					}
					node.Fields[name] = key(f.Type)
					if strings.Contains(tag, ",omitempty") {
						node.Omit = append(node.Omit, name)
					}
					if f.Type.Kind() == reflect.Pointer {
						node.Pointers = append(node.Pointers, name)
					}
				}
			}
			walk(t)
			sort.Strings(node.Omit)
			sort.Strings(node.Pointers)
		case t.Kind() == reflect.String:
			node.Kind = "string"
		case t.Kind() == reflect.Bool:
			node.Kind = "bool"
		case t.Kind() >= reflect.Int && t.Kind() <= reflect.Int64:
			node.Kind, node.Bits = "int", t.Bits()
		case t.Kind() >= reflect.Uint && t.Kind() <= reflect.Uint64:
			node.Kind, node.Bits = "uint", t.Bits()
		case t.Kind() == reflect.Float32 || t.Kind() == reflect.Float64:
			node.Kind, node.Bits = "float", t.Bits()
		case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Uint8:
			node.Kind = "bytes"
		case t.Kind() == reflect.Slice || t.Kind() == reflect.Array:
			node.Kind = "slice"
			node.Elem = key(t.Elem())
		case t.Kind() == reflect.Map:
			node.Kind = "map"
			node.Elem = key(t.Elem())
		case t.Kind() == reflect.Interface:
			node.Kind = "any"
		default:
			fail(fmt.Errorf("a %s in the served kinds", t))
		}
		types[k] = node
		return k
	}
	rootKeys := map[string]string{}
	for name, value := range roots {
		rootKeys[name] = key(reflect.TypeOf(value))
	}
	out, err := json.MarshalIndent(map[string]any{"roots": rootKeys, "types": types}, "", " ")
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(append(out, '\n'))
}

// goField is one field of a Go struct as the generator's `x-apfkit-go` extension holds it.
type goField struct {
	JSON     string `json:"json"`
	Protobuf *int   `json:"protobuf"`
	Pointer  bool   `json:"pointer,omitempty"`
	Omit     bool   `json:"omitempty,omitempty"`
	OmitZero bool   `json:"omitzero,omitempty"`
}

// goLayouts writes the layout of every k8s.io/api struct reachable from the kinds
// apfkit-corekinds and apfkit-namespaces serve, and their lists, keyed by OpenAPI definition name (k8s.io/api/core/v1.ConfigMap is
// io.k8s.api.core.v1.ConfigMap). apimachinery's types are left out: the generator takes k8s-openapi's, whose layouts apfkit-wire holds.
func goLayouts() {
	roots := []any{
		corev1.ConfigMap{}, corev1.ConfigMapList{},
		corev1.Secret{}, corev1.SecretList{},
		corev1.ServiceAccount{}, corev1.ServiceAccountList{},
		corev1.Namespace{}, corev1.NamespaceList{},
		corev1.Event{}, corev1.EventList{},
		eventsv1.Event{}, eventsv1.EventList{},
		coordinationv1.Lease{}, coordinationv1.LeaseList{},
	}
	layouts := map[string][]goField{}
	var visit func(t reflect.Type)
	visit = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || !strings.HasPrefix(t.PkgPath(), "k8s.io/api/") {
			return
		}
		name := "io." + strings.ReplaceAll(t.PkgPath(), "/", ".") + "." + t.Name()
		name = strings.Replace(name, "io.k8s.io.", "io.k8s.", 1)
		if _, seen := layouts[name]; seen {
			return
		}
		fields := []goField{}
		layouts[name] = fields
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			jsonName, options, _ := strings.Cut(tag, ",")
			if f.Anonymous && f.Type.Name() == "TypeMeta" {
				fields = append(fields,
					goField{JSON: "kind", Omit: true},
					goField{JSON: "apiVersion", Omit: true})
				continue
			}
			if tag == "-" || !f.IsExported() {
				continue
			}
			field := goField{
				JSON:     jsonName,
				Pointer:  f.Type.Kind() == reflect.Pointer,
				Omit:     strings.Contains(","+options+",", ",omitempty,"),
				OmitZero: strings.Contains(","+options+",", ",omitzero,"),
			}
			if parts := strings.Split(f.Tag.Get("protobuf"), ","); len(parts) > 1 {
				number := 0
				if _, err := fmt.Sscanf(parts[1], "%d", &number); err != nil {
					fail(fmt.Errorf("%s.%s: protobuf tag %q", name, f.Name, f.Tag.Get("protobuf")))
				}
				field.Protobuf = &number
			} else {
				fail(fmt.Errorf("%s.%s has no protobuf tag", name, f.Name))
			}
			fields = append(fields, field)
			visit(f.Type)
		}
		layouts[name] = fields
	}
	for _, root := range roots {
		visit(reflect.TypeOf(root))
	}
	out, err := json.MarshalIndent(layouts, "", " ")
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(append(out, '\n'))
}

// swaggerDocs writes the field documentation of the types kube-apiserver's printers read.
func swaggerDocs() {
	docs := map[string]map[string]string{
		"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta":               metav1.ObjectMeta{}.SwaggerDoc(),
		"io.k8s.api.core.v1.ServiceSpec":                                corev1.ServiceSpec{}.SwaggerDoc(),
		"io.k8s.api.core.v1.ConfigMap":                                  corev1.ConfigMap{}.SwaggerDoc(),
		"io.k8s.api.core.v1.Secret":                                     corev1.Secret{}.SwaggerDoc(),
		"io.k8s.api.core.v1.Event":                                      corev1.Event{}.SwaggerDoc(),
		"io.k8s.api.core.v1.ObjectReference":                            corev1.ObjectReference{}.SwaggerDoc(),
		"io.k8s.api.coordination.v1.LeaseSpec":                          coordinationv1.LeaseSpec{}.SwaggerDoc(),
		"io.k8s.api.discovery.v1.EndpointSlice":                         discoveryv1.EndpointSlice{}.SwaggerDoc(),
		"io.k8s.api.flowcontrol.v1.FlowSchemaSpec":                      flowcontrolv1.FlowSchemaSpec{}.SwaggerDoc(),
		"io.k8s.api.flowcontrol.v1.LimitedPriorityLevelConfiguration":   flowcontrolv1.LimitedPriorityLevelConfiguration{}.SwaggerDoc(),
		"io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationReference": flowcontrolv1.PriorityLevelConfigurationReference{}.SwaggerDoc(),
		"io.k8s.api.flowcontrol.v1.PriorityLevelConfigurationSpec":      flowcontrolv1.PriorityLevelConfigurationSpec{}.SwaggerDoc(),
		"io.k8s.api.flowcontrol.v1.QueuingConfiguration":                flowcontrolv1.QueuingConfiguration{}.SwaggerDoc(),
		// The bindings' printers still describe the role by v1beta1's documentation.
		"io.k8s.api.rbac.v1beta1.ClusterRoleBinding": rbacv1beta1.ClusterRoleBinding{}.SwaggerDoc(),
		"io.k8s.api.rbac.v1beta1.RoleBinding":        rbacv1beta1.RoleBinding{}.SwaggerDoc(),
	}
	out, err := json.MarshalIndent(docs, "", "  ")
	if err != nil {
		fail(err)
	}
	os.Stdout.Write(append(out, '\n'))
}

// eachLine reads standard input a line at a time and writes, a line each, the JSON array
// answer makes of the line.
func eachLine(answer func(line []byte) []any) {
	lines := bufio.NewScanner(os.Stdin)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for lines.Scan() {
		line, err := json.Marshal(answer(lines.Bytes()))
		if err != nil {
			fail(err)
		}
		out.Write(append(line, '\n'))
	}
}

// text is the JSON string a line holds.
func text(line []byte) string {
	var text string
	if err := json.Unmarshal(line, &text); err != nil {
		fail(fmt.Errorf("%s: %w", line, err))
	}
	return text
}

// yamlLines writes each value as the `default` of a schema in a document gnostic compiles.
func yamlLines() {
	eachLine(func(value []byte) []any {
		doc := `{"swagger":"2.0","info":{"title":"t","version":"v"},"paths":{},` +
			`"definitions":{"A":{"default":` + string(value) + `}}}`
		parsed, err := openapi_v2.ParseDocument([]byte(doc))
		if err != nil {
			fail(fmt.Errorf("%s: %w", value, err))
		}
		return []any{json.RawMessage(value), parsed.Definitions.AdditionalProperties[0].Value.Default.Yaml}
	})
}

// timeLines writes, for each value, the error unmarshal (a time type's UnmarshalJSON) answers.
func timeLines(unmarshal func([]byte) error) {
	eachLine(func(value []byte) []any {
		var problem any
		if err := unmarshal(value); err != nil {
			problem = err.Error()
		}
		return []any{json.RawMessage(value), problem}
	})
}

// jsonLines writes, for each document, the syntax error Go's decoder finds in it.
func jsonLines() {
	eachLine(func(line []byte) []any {
		document := text(line)
		var problem any
		var offset int64
		var into any
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts([]byte(document), &into); err != nil {
			problem = err.Error()
			// The same scanner in the standard library, whose error shows its offset.
			var syntax *json.SyntaxError
			if errors.As(json.Unmarshal([]byte(document), &into), &syntax) {
				offset = syntax.Offset
			}
		}
		return []any{document, problem, offset}
	})
}

// selectorLines writes, for each selector, the error parse answers or what it parsed.
func selectorLines(parse func(string) (fmt.Stringer, error)) {
	eachLine(func(line []byte) []any {
		selector := text(line)
		var problem, parsed any
		if got, err := parse(selector); err != nil {
			problem = err.Error()
		} else {
			parsed = got.String()
		}
		return []any{selector, problem, parsed}
	})
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "golden:", err)
	os.Exit(1)
}
