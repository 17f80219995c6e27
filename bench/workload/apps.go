package workload

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"

	"github.com/restoregraph/restoregraph/archive"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Shape is how a generated cluster lays its applications out.
type Shape struct {
	// AppsPerNamespace is how many applications each namespace holds, beside the
	// Namespace itself.
	AppsPerNamespace int
	// ServiceEvery: one application in this many has a Service.
	ServiceEvery int
	// OldReplicaSets is how many ReplicaSets of earlier rollouts each Deployment keeps,
	// scaled to zero, as its revisionHistoryLimit (10 by default) lets it.
	OldReplicaSets int
	// HelmReleases is how many of Helm's release Secrets each application has: one a
	// revision, as Helm keeps them (10 by default).
	HelmReleases int
}

// Apps is the shape of WriteApps: namespaces of 100 applications, each of ten objects,
// a Service among them. At 100,000 objects that is 10,000 Services and 30,000 Pods.
var Apps = Shape{AppsPerNamespace: 100, ServiceEvery: 1}

// Envelope lays a million objects out within Kubernetes' scalability thresholds
// (sig-scalability's thresholds.md: 10,000 namespaces, 10,000 Services and 150,000 Pods
// in a cluster): namespaces of ten applications, a Service for one application in five,
// and what a long-lived cluster piles up beside them, the old ReplicaSets of nine
// rollouts and two revisions of a Helm release. An application is about 20 objects: a
// million are 4,950 namespaces, 9,900 Services and 148,500 Pods. The same million as
// Apps would hold 100,000 Services, ten times the threshold, and the server's Service
// creation slows tenfold by 9,000 (BenchmarkIntegrationServices).
var Envelope = Shape{AppsPerNamespace: 10, ServiceEvery: 5, OldReplicaSets: 9, HelmReleases: 2}

// WriteApps writes, as a Velero tarball in format 1.1.0, a backup of at least objects
// objects as a cluster of many application namespaces holds them, in the Apps shape:
// per application a ServiceAccount, ConfigMap, Secret, Service, RoleBinding, and a
// Deployment owning a ReplicaSet owning three Pods, with the labels, annotations, specs
// and statuses the API server and its controllers write. It streams: nothing is held
// but the writer's own index of paths, so a million objects fit in a benchmark. It
// returns how many objects it wrote.
func WriteApps(w io.Writer, objects int, seed uint64) (int, error) {
	return WriteShaped(w, objects, seed, Apps)
}

// WriteShaped is WriteApps in another shape.
func WriteShaped(w io.Writer, objects int, seed uint64, shape Shape) (int, error) {
	if shape.AppsPerNamespace < 1 || shape.ServiceEvery < 1 || shape.OldReplicaSets < 0 || shape.HelmReleases < 0 {
		return 0, fmt.Errorf("workload: shape %+v: AppsPerNamespace and ServiceEvery must be positive, the rest not negative", shape)
	}
	aw, err := archive.NewWriter(w, archive.Format11)
	if err != nil {
		return 0, err
	}
	g := &appWriter{aw: aw, rng: rand.New(rand.NewPCG(seed, 7)), shape: shape}
	for ns := 0; g.written < objects; ns++ {
		name := fmt.Sprintf("team-%05d", ns)
		if err := g.namespace(name); err != nil {
			return g.written, err
		}
		for app := range shape.AppsPerNamespace {
			if err := g.app(name, fmt.Sprintf("svc-%03d", app), g.apps%shape.ServiceEvery == 0); err != nil {
				return g.written, err
			}
			g.apps++
		}
	}
	return g.written, aw.Close()
}

type appWriter struct {
	aw      *archive.Writer
	rng     *rand.Rand
	shape   Shape
	buf     []byte
	written int
	apps    int
	rv      int
	// only, when set, is the one resource put writes: the others are made (and counted
	// in made) but not written, so that a backup can be written resource by resource.
	only string
	made int
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
	g.made++
	if g.only != "" && resource != g.only {
		return nil
	}
	g.written++
	return g.aw.AddJSON(archive.Entry{APIVersion: apiVersion, Resource: resource, Namespace: ns, Name: name}, []byte(body), true)
}

func (g *appWriter) namespace(ns string) error {
	m := g.meta("", ns, g.uid(), fmt.Sprintf(`,"labels":{"kubernetes.io/metadata.name":%q,"team":%q}`, ns, ns))
	return g.put("v1", "namespaces", "", ns, fmt.Sprintf(`{"apiVersion":"v1","kind":"Namespace",%s,"spec":{"finalizers":["kubernetes"]},"status":{"phase":"Active"}}`, m))
}

func (g *appWriter) app(ns, app string, service bool) error {
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
	if service {
		ip := fmt.Sprintf("10.%d.%d.%d", g.rng.IntN(256), g.rng.IntN(256), 1+g.rng.IntN(254))
		if _, err := put("v1", "Service", "services", app, ","+labels,
			fmt.Sprintf(`,"spec":{"ports":[{"name":"http","protocol":"TCP","port":80,"targetPort":8080}],"selector":{"app.kubernetes.io/name":%q},"clusterIP":%q,"clusterIPs":[%q],"type":"ClusterIP","sessionAffinity":"None","ipFamilies":["IPv4"],"ipFamilyPolicy":"SingleStack","internalTrafficPolicy":"Cluster"},"status":{"loadBalancer":{}}`, app, ip, ip)); err != nil {
			return err
		}
	}
	if _, err := put("rbac.authorization.k8s.io/v1", "RoleBinding", "rolebindings", app+"-view", ","+labels,
		fmt.Sprintf(`,"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"view"},"subjects":[{"kind":"ServiceAccount","name":%q,"namespace":%q}]`, app, ns)); err != nil {
		return err
	}
	container := fmt.Sprintf(`"containers":[{"name":"app","image":"registry.example.com/%s:1.4.2","ports":[{"name":"http","containerPort":8080,"protocol":"TCP"}],"envFrom":[{"configMapRef":{"name":"%s-config"}}],"resources":{"limits":{"cpu":"500m","memory":"256Mi"},"requests":{"cpu":"100m","memory":"128Mi"}},"readinessProbe":{"httpGet":{"path":"/healthz","port":8080,"scheme":"HTTP"},"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","serviceAccountName":%q,"serviceAccount":%q,"securityContext":{},"schedulerName":"default-scheduler"`, app, app, app, app)
	template := func(hash string) string {
		return fmt.Sprintf(`"template":{"metadata":{"creationTimestamp":null,"labels":{"app.kubernetes.io/name":%q,"pod-template-hash":%q}},"spec":{%s}}`, app, hash, container)
	}
	rev := g.shape.OldReplicaSets + 1 // the current ReplicaSet's revision, and the Deployment's generation, observed
	dep, err := put("apps/v1", "Deployment", "deployments", app, fmt.Sprintf(`,"generation":%d,"annotations":{"deployment.kubernetes.io/revision":"%d"},`, rev, rev)+labels,
		fmt.Sprintf(`,"spec":{"replicas":3,"selector":{"matchLabels":{"app.kubernetes.io/name":%q}},%s,"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":"25%%","maxSurge":"25%%"}},"revisionHistoryLimit":10,"progressDeadlineSeconds":600},"status":{"observedGeneration":%d,"replicas":3,"updatedReplicas":3,"readyReplicas":3,"availableReplicas":3,"conditions":[{"type":"Available","status":"True","lastUpdateTime":"2026-11-01T10:00:10Z","lastTransitionTime":"2026-11-01T10:00:10Z","reason":"MinimumReplicasAvailable","message":"Deployment has minimum availability."}]}`, app, template("7d9f8c6b5"), rev))
	if err != nil {
		return err
	}
	replicaSet := func(hash string, revision, replicas int) (string, string, error) {
		name := app + "-" + hash
		uid, err := put("apps/v1", "ReplicaSet", "replicasets", name,
			fmt.Sprintf(`,"generation":1,"annotations":{"deployment.kubernetes.io/desired-replicas":"3","deployment.kubernetes.io/max-replicas":"4","deployment.kubernetes.io/revision":"%d"}`, revision)+owner("apps/v1", "Deployment", app, dep)+`,`+labels,
			fmt.Sprintf(`,"spec":{"replicas":%d,"selector":{"matchLabels":{"app.kubernetes.io/name":%q,"pod-template-hash":%q}},%s},"status":{"replicas":%d,"fullyLabeledReplicas":%d,"readyReplicas":%d,"availableReplicas":%d,"observedGeneration":1}`,
				replicas, app, hash, template(hash), replicas, replicas, replicas, replicas))
		return name, uid, err
	}
	rsName, rs, err := replicaSet("7d9f8c6b5", rev, 3)
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
	for r := 1; r <= g.shape.OldReplicaSets; r++ {
		if _, _, err := replicaSet(fmt.Sprintf("5c4b%05x", r), r, 0); err != nil {
			return err
		}
	}
	for r := 1; r <= g.shape.HelmReleases; r++ {
		status := "superseded"
		if r == g.shape.HelmReleases {
			status = "deployed"
		}
		name := fmt.Sprintf("sh.helm.release.v1.%s.v%d", app, r)
		if _, err := put("v1", "Secret", "secrets", name,
			fmt.Sprintf(`,"labels":{"name":%q,"owner":"helm","status":%q,"version":"%d"}`, app, status, r),
			fmt.Sprintf(`,"type":"helm.sh/release.v1","data":{"release":%q}`, g.release())); err != nil {
			return err
		}
	}
	return nil
}

// release is the data of a Helm release Secret: a gzipped release, base64-encoded, as
// it would not compress again; 1.5 KiB of random bytes stand for it.
func (g *appWriter) release() string {
	var raw [1536]byte
	for i := 0; i < len(raw); i += 8 {
		binary.LittleEndian.PutUint64(raw[i:], g.rng.Uint64())
	}
	return base64.StdEncoding.EncodeToString(raw[:])
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
