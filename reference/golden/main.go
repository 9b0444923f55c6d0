// Command golden writes what Go's libraries answer for inputs apfkit ports their behaviour
// for, as test data the Rust tests hold apfkit's ports to:
//
//	golden yaml < values.jsonl      one JSON value a line in; a line [value, yaml] out, the
//	                                yaml as gnostic's compiler.Marshal writes an Any's
//	golden gnostic < swagger.json   an OpenAPI v2 document in; its protobuf out, as
//	                                kube-openapi's handler.ToProtoBinary writes it
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	"k8s.io/kube-openapi/pkg/handler"
)

func main() {
	if len(os.Args) != 2 {
		fail(fmt.Errorf("usage: golden yaml|gnostic"))
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
	default:
		fail(fmt.Errorf("unknown mode %q", os.Args[1]))
	}
}

// yamlLines writes each value as the `default` of a schema in a document gnostic compiles.
func yamlLines() {
	lines := bufio.NewScanner(os.Stdin)
	lines.Buffer(make([]byte, 1<<20), 1<<20)
	out := bufio.NewWriter(os.Stdout)
	defer out.Flush()
	for lines.Scan() {
		value := lines.Text()
		doc := `{"swagger":"2.0","info":{"title":"t","version":"v"},"paths":{},` +
			`"definitions":{"A":{"default":` + value + `}}}`
		parsed, err := openapi_v2.ParseDocument([]byte(doc))
		if err != nil {
			fail(fmt.Errorf("%s: %w", value, err))
		}
		line, err := json.Marshal([]any{json.RawMessage(value), parsed.Definitions.AdditionalProperties[0].Value.Default.Yaml})
		if err != nil {
			fail(err)
		}
		out.Write(append(line, '\n'))
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "golden:", err)
	os.Exit(1)
}
