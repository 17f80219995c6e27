package workload

import (
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/restoregraph/restoregraph/archive"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// AppsPerNamespace and ObjectsPerApp shape WriteApps: each namespace holds this many
// applications of ObjectsPerApp objects each, beside the Namespace itself.
const (
	AppsPerNamespace = 100
	ObjectsPerApp    = 10
)

// WriteApps writes, as a Velero tarball in format 1.1.0, a backup of at least objects
// objects as a cluster of many application namespaces holds them: per application a
// ServiceAccount, ConfigMap, Secret, Service, RoleBinding, and a Deployment owning a
// ReplicaSet owning three Pods, with the labels, annotations, specs and statuses the
// API server and its controllers write. It streams: nothing is held but the writer's
// own index of paths, so a million objects fit in a benchmark. It returns how many
// objects it wrote.
func WriteApps(w io.Writer, objects int, seed uint64) (int, error) {
	aw, err := archive.NewWriter(w, archive.Format11)
	if err != nil {
		return 0, err
	}
	g := &appWriter{aw: aw, rng: rand.New(rand.NewPCG(seed, 7))}
	for ns := 0; g.written < objects; ns++ {
		name := fmt.Sprintf("team-%05d", ns)
		if err := g.namespace(name); err != nil {
			return g.written, err
		}
		for app := range AppsPerNamespace {
			if err := g.app(name, fmt.Sprintf("svc-%03d", app)); err != nil {
				return g.written, err
			}
		}
	}
	return g.written, aw.Close()
}

type appWriter struct {
	aw      *archive.Writer
	rng     *rand.Rand
	buf     []byte
	written int
	rv      int
}

func (g *appWriter) uid() string {
	r := g.rng
	return fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", r.Uint32(), r.Uint32()&0xffff, r.Uint32()&0xfff, r.Uint32()&0xfff, r.Uint64()&0xffffffffffff)
}

// meta is the metadata every object carries; extra is more of its members, written as
// they are (each starting with a comma).
func (g *appWriter) meta(ns, name, uid, extra string) []byte {
	g.rv++
	b := fmt.Appendf(g.buf[:0], `"metadata":{"name":%q,`, name)
	if ns != "" {
		b = fmt.Appendf(b, `"namespace":%q,`, ns)
	}
	b = fmt.Appendf(b, `"uid":%q,"resourceVersion":"%d","creationTimestamp":"2026-11-01T10:00:00Z"%s}`, uid, 1000+g.rv, extra)
	g.buf = b
	return b
}

func (g *appWriter) put(apiVersion, resource, ns, name string, body string) error {
	g.written++
	return g.aw.AddJSON(archive.Entry{APIVersion: apiVersion, Resource: resource, Namespace: ns, Name: name}, []byte(body), true)
}

func (g *appWriter) namespace(ns string) error {
	m := g.meta("", ns, g.uid(), fmt.Sprintf(`,"labels":{"kubernetes.io/metadata.name":%q,"team":%q}`, ns, ns))
	return g.put("v1", "namespaces", "", ns, fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace",%s,"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`, m))
}

func (g *appWriter) app(ns, app string) error {
	labels := fmt.Sprintf(`"labels":{"app.kubernetes.io/name":%q,"app.kubernetes.io/part-of":%q}`, app, ns)
	put := func(apiVersion, kind, resource, name, extra, rest string) (string, error) {
		uid := g.uid()
		m := g.meta(ns, name, uid, extra)
		return uid, g.put(apiVersion, resource, ns, name, fmt.Sprintf(`{"apiVersion":%q,"kind":%q,%s%s}`, apiVersion, kind, m, rest))
	}
	owner := func(apiVersion, kind, name, uid string) string {
		return fmt.Sprintf(`,"ownerReferences":[{"apiVersion":%q,"kind":%q,"name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]`, apiVersion, kind, name, uid)
	}
	if _, err := put("v1", "ServiceAccount", "serviceaccounts", app, ","+labels, ""); err != nil {
		return err
	}
	if _, err := put("v1", "ConfigMap", "configmaps", app+"-config", ","+labels,
		`,"data":{"LOG_LEVEL":"info","config.yaml":"listen: :8080\nupstream: http://backend:9000\ntimeout: 30s\nretries: 3\n"}`); err != nil {
		return err
	}
	if _, err := put("v1", "Secret", "secrets", app+"-creds", ","+labels,
		`,"type":"Opaque","data":{"password":"aHVudGVyMg==","username":"YWRtaW4="}`); err != nil {
		return err
	}
	ip := fmt.Sprintf("10.%d.%d.%d", g.rng.IntN(256), g.rng.IntN(256), 1+g.rng.IntN(254))
	if _, err := put("v1", "Service", "services", app, ","+labels,
		fmt.Sprintf(`,"spec":{"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":8080}],"selector":{"app.kubernetes.io/name":%q},"clusterIP":%q,"clusterIPs":[%q],"type":"ClusterIP","sessionAffinity":"None","ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","internalTrafficPolicy":"Cluster"},"status":{"loadBalancer":{}}`, app, ip, ip)); err != nil {
		return err
	}
	if _, err := put("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", app+"-view", ","+labels,
		fmt.Sprintf(`,"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":%q,"namespace":%q}]`, app, ns)); err != nil {
		return err
	}
	container := fmt.Sprintf(`"containers":[{"name":"app","image":"registry.example.com/%s:1.4.2","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],"envFrom":[{"configMapRef":{"name":"%s-config"}}],"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"readinessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":%q,"serviceAccount":%q,"securityContext":{},"schedulerName":"default-scheduler"`, app, app, app, app)
	template := fmt.Sprintf(`"template":{"metadata":{"creationTimestamp":null,"labels":{"app.kubernetes.io/name":%q,"pod-template-hash":"7d9f8c6b5"}},"spec":{%s}}`, app, container)
	dep, err := put("apps/v1", "Deployment", "deployments", app, `,"generation":1,"annotations":{"deployment.kubernetes.io/revision":"1"},`+labels,
		fmt.Sprintf(`,"spec":{"replicas":3,"selector":{"matchLabels":{"app.kubernetes.io/name":%q}},%s,"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%%","maxSurge":"25%%"}},"revisionHistoryLimit":10,"progressDeadlineSeconds":600},"status":{"observedGeneration":1,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,"conditions":[{"type":"Available","status":"True","lastUpdateTime":"2026-11-01T10:00:10Z","lastTransitionTime":"2026-11-01T10:00:10Z","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability."}]}`, app, template))
	if err != nil {
		return err
	}
	rsName := app + "-7d9f8c6b5"
	rs, err := put("apps/v1", "ReplicaSet", "replicasets", rsName,
		`,"generation":1,"annotations":{"deployment.kubernetes.io/desired-replicas":"3","deployment.kubernetes.io/max-replicas":"4","deployment.kubernetes.io/revision":"1"}`+owner("apps/v1", "Deployment", app, dep)+`,`+labels,
		fmt.Sprintf(`,"spec":{"replicas":3,"selector":{"matchLabels":{"app.kubernetes.io/name":%q,"pod-template-hash":"7d9f8c6b5"}},%s},"status":{"replicas":3,"fullyLabeledReplicas":3,"readyReplicas":3,"availableReplicas":3,"observedGeneration":1}`, app, template))
	if err != nil {
		return err
	}
	for p := range 3 {
		name := fmt.Sprintf("%s-%05x", rsName, g.rng.IntN(1<<20)&^3|p) // distinct within the ReplicaSet
		podIP := fmt.Sprintf("10.244.%d.%d", g.rng.IntN(256), 1+g.rng.IntN(254))
		if _, err := put("v1", "Pod", "pods", name, owner("apps/v1", "ReplicaSet", rsName, rs)+`,"generateName":"`+rsName+`-",`+labels,
			fmt.Sprintf(`,"spec":{%s,"nodeName":"node-%d","priority":0,"enableServiceLinks":true,"preemptionPolicy":"PreemptLowerPriority"},"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-01T10:00:08Z"},{"type":"PodScheduled","status":"True","lastProbeTime":null,"lastTransitionTime":"2026-11-01T10:00:01Z"}],"hostIP":"192.168.0.%d","podIP":%q,"podIPs":[{"ip":%q}],"startTime":"2026-11-01T10:00:01Z","qosClass":"Burstable"}`, container, p, 10+p, podIP, podIP)); err != nil {
			return err
		}
	}
	return nil
}

// WithManifest writes b again as a Velero tarball in format 1.1.0 with its manifest
// first, as restoregraph's backup writes one: each object at every version b holds,
// the preferred one twice.
func WithManifest(w io.Writer, b *archive.Backup) error {
	aw, err := archive.NewWriter(w, archive.Format11)
	if err != nil {
		return err
	}
	m := b.Manifest()
	if err := aw.AddManifest(m); err != nil {
		return err
	}
	for _, it := range m.Items() {
		res, _ := m.Resource(it.GroupResource())
		for _, v := range res.Versions {
			data, err := b.Body(it.GroupResource(), v, it.Namespace, it.Name)
			if err != nil {
				continue // not held at this version
			}
			e := archive.Entry{APIVersion: schema.GroupVersion{Group: it.Group, Version: v}.String(), Resource: it.Resource, Namespace: it.Namespace, Name: it.Name}
			if err := aw.AddJSON(e, data, v == res.Preferred); err != nil {
				return err
			}
		}
	}
	return aw.Close()
}
