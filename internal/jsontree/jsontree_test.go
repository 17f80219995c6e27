package jsontree

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	kjson "k8s.io/apimachinery/pkg/util/json"
)

var docs = []string{
	`{}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"containers":[{"name":"app","ports":[{"containerPort":8080}]}]}}`,
	`{"int":3,"neg":-7,"big":9223372036854775807,"bigger":9223372036854775808,"float":1.5,"whole float":1.0,"exp":1e3,"tiny":-2.5E-7}`,
	`{"t":true,"f":false,"n":null,"empty object":{},"empty array":[],"nested":[[1,[2]],{"a":[]}]}`,
	`{"escaped":"a\"b\\c\/d\u00e9\ud83d\ude00\n","key\u0041":"x"}`,
	"{\"invalid utf-8\":\"a\xffb\"}",
	`{"dup":1,"dup":2}`,
	` { "spaced" : [ 1 , 2 ] } `,
	`{"ints":[0,-0,7,-123456789012345678,1234567890123456789,-1234567890123456789,1e2,-5.0,0.5]}`,
}

// Object decodes as k8s.io/apimachinery's util/json does.
func TestObjectDecodesAsAPIMachinery(t *testing.T) {
	for _, doc := range docs {
		var want map[string]any
		require.NoError(t, kjson.Unmarshal([]byte(doc), &want), doc)
		got, err := Object([]byte(doc))
		require.NoError(t, err, doc)
		assert.Equal(t, want, got, doc)
	}
}

// Strings recur from object to object and are kept between decodes: what one object's
// decode kept stands for the same string in the next, or is replaced, whichever slot its
// hash picks; and one string longer than is kept. Every object still decodes as
// util/json decodes it.
func TestStringsKeptBetweenObjects(t *testing.T) {
	long := strings.Repeat("l", internMax+1)
	for i := range 3 * internSlots {
		doc := fmt.Sprintf(`{"k%d":"v%d","shared":"TCP","esc\u0041%d":"a\nb","n":%d,"long":%q}`, i%100, i, i%7, i, long)
		var want map[string]any
		require.NoError(t, kjson.Unmarshal([]byte(doc), &want))
		got, err := Object([]byte(doc))
		require.NoError(t, err)
		require.Equal(t, want, got, doc)
	}
}

func TestObjectRefusesWhatIsNotOneObject(t *testing.T) {
	for _, doc := range []string{``, `[]`, `"s"`, `{"a":1}{}`, `{"a":1`, `{"a":1,}`, `{"a":01}`, `{a:1}`, `{"a":1} x`} {
		_, err := Object([]byte(doc))
		assert.Error(t, err, doc)
	}
}

func FuzzObject(f *testing.F) {
	for _, doc := range docs {
		f.Add([]byte(doc))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var want map[string]any
		wantErr := kjson.Unmarshal(data, &want)
		got, err := Object(data)
		// What jsontext refuses, with the options util/json's leniency asks for, Object
		// refuses; an object it accepts, Object decodes.
		if !valid(data) {
			require.Error(t, err, "%q", data)
		} else if bytes.HasPrefix(bytes.TrimLeft(data, " \t\r\n"), []byte("{")) {
			require.NoError(t, err, "%q", data)
		}
		if wantErr != nil || want == nil {
			return // what encoding/json refuses may be refused or not; a JSON null is not an object
		}
		require.NoError(t, err, "%q", data)
		assert.Equal(t, want, got, "%q", data)
	})
}

func BenchmarkObject(b *testing.B) {
	pod := []byte(docs[1])
	b.Run("jsontree", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Object(pod); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("apimachinery", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var m map[string]any
			if err := kjson.Unmarshal(pod, &m); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// podJSON is a Pod as a kube-apiserver and its kubelet write it, i its ordinal: what
// recurs from Pod to Pod (field names, the image, the namespace) and what does not
// (names, UIDs, IPs, times) as in a backup.
func podJSON(i int) []byte {
	return fmt.Appendf(nil, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-7d9f8b6c5-%05x","generateName":"web-7d9f8b6c5-","namespace":"shop-%d","uid":"%08x-4c1e-4b8a-9f3e-2a7c5d6e8f90","resourceVersion":"%d","creationTimestamp":"2026-11-%02dT10:%02d:%02dZ","labels":{"app":"web","pod-template-hash":"7d9f8b6c5"},"ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"web-7d9f8b6c5","uid":"%08x-1111-4b8a-9f3e-2a7c5d6e8f90","controller":true,"blockOwnerDeletion":true}],"managedFields":[{"manager":"kube-controller-manager","operation":"Update","apiVersion":"v1","time":"2026-11-01T10:00:00Z","fieldsType":"FieldsV1","fieldsV1":{"f:metadata":{"f:generateName":{},"f:labels":{".":{},"f:app":{},"f:pod-template-hash":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:image":{},"f:name":{}}}}}}]},"spec":{"containers":[{"name":"app","image":"registry.example.com/shop/web:1.27.3","ports":[{"containerPort":8080,"protocol":"TCP"}],"resources":{"requests":{"cpu":"100m","memory":"128Mi"}},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":"default","nodeName":"node-%d","schedulerName":"default-scheduler","priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-01T10:00:05Z"}],"hostIP":"10.0.%d.%d","podIP":"10.244.%d.%d","startTime":"2026-11-01T10:00:00Z","qosClass":"Burstable"}}`,
		i, i%50, i, 1000+i, 1+i%28, i%60, i%60, i, i%20, i%250, i%200, i%250, i%200)
}

// BenchmarkObjects decodes a thousand Pods of a backup one after the other, as a
// restore's workers do; ns/op and allocs/op are per Pod.
func BenchmarkObjects(b *testing.B) {
	pods := make([][]byte, 1000)
	for i := range pods {
		pods[i] = podJSON(i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := Object(pods[i%len(pods)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
