/*
 * admit.h - the admission decisions on tenant rules: an AdmissionRequest and what landlord
 * knows in, allow, deny or audit out.
 *
 * The webhook (src/webhook/rule_tenancy.c) reads an AdmissionReview and asks adm_decide() for
 * the verdict on the rules of issue 12, points 7 to 9: RoleBinding subjects, PVC storage
 * classes, Ingress, HTTPRoute and Gateway classes and hosts, Service types and externalIPs,
 * cordoned tenants and namespaces, Pod and pod-template rules (registries, pull policies,
 * priority and runtime classes, denied ServiceAccounts), and the Tenant and Plan objects
 * themselves; and those of issue 13, point 3: a TemplateInstance names a Template that exists,
 * is instantiable in its namespace and accepts its parameters, and a Template renders
 * (admit_templates.c). docs/admission-rules.md lists every rule with its message.
 *
 * It also says who wrote a TemplateInstance (adm_decision.last_writer), for the mutating
 * webhook to record in the annotation landlord.dev/last-writer (issue 13, point 4).
 *
 * What landlord knows comes through a struct adm_view: a table of functions over a read-only
 * state (which tenant a namespace belongs to, the Tenant with its parsed host policy, which
 * tenant uses a host, the LandlordConfig, the rule modes). The webhook serves it from informer
 * caches, so no decision makes an API call; tests and the benchmark serve it from one JSON
 * document (admit_memview.h).
 *
 * Each rule belongs to a family (enum adm_family); the view says whether a family denies (the
 * default) or audits. An audited violation admits the request with an admission warning
 * "audit: <message>" and sets the family's bit in adm_decision.audited, for the caller to
 * record an Event and a metric. The first denied violation decides: its message is returned
 * and nothing further is checked.
 *
 * Invariants:
 * - Pure: no I/O, no globals, no allocation that outlives a call; any number of threads may
 *   decide at once on one view, as long as the view's functions are thread-safe.
 * - Everything read is borrowed: the request's document for the call, the view's answers
 *   until adm_decide() returns (a view must keep what it lends alive that long).
 * - Every message is one printable line built by denial.h: it names the rule, the value and
 *   what would be accepted.
 */
#ifndef LANDLORD_ADMIT_H
#define LANDLORD_ADMIT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/jdoc.h"
#include "tenancy/denial.h"
#include "tenancy/hostmatch.h"
#include "tenancy/landlordconfig.h"

struct ll_err;

/* The rule families, each with its own mode; names as in LandlordConfig spec.admission.modes. */
enum adm_family {
	ADM_RBAC,       /* "rolebindings" */
	ADM_STORAGE,    /* "storage" */
	ADM_INGRESS,    /* "ingress": Ingress, HTTPRoute and Gateway classes and hosts */
	ADM_SERVICES,   /* "services" */
	ADM_CORDON,     /* "cordon" */
	ADM_PODS,       /* "pods": Pods and pod templates */
	ADM_TENANTS,    /* "tenants": Tenant and Plan objects */
	ADM_NAMESPACES, /* "namespaces": self-service namespaces (prefix, owners, maxNamespaces) */
	ADM_TEMPLATES,  /* "templates": TemplateInstances and Templates */
	ADM_FAMILY_N,
};

enum adm_mode {
	ADM_DENY,  /* refuse (the default) */
	ADM_AUDIT, /* admit with a warning */
};

/** adm_family_name() - "rolebindings", "storage"... (static); NULL out of range. */
const char *adm_family_name(enum adm_family f);

/** adm_family_parse() - the family named @name, or -1. */
int adm_family_parse(const char *name);

/* request.operation, as a set. */
enum adm_op {
	ADM_CREATE = 1u << 0,
	ADM_UPDATE = 1u << 1,
	ADM_DELETE = 1u << 2,
	ADM_CONNECT = 1u << 3,
};

/* An AdmissionRequest, read in place; every pointer is lent by its document. */
struct adm_request {
	struct jval req;         /* the whole AdmissionRequest */
	unsigned op;             /* one enum adm_op */
	const char *group;       /* request.resource.group; "" for the core group */
	const char *resource;    /* request.resource.resource: "pods" */
	const char *subresource; /* "" when none */
	const char *ns;          /* request.namespace; "" for cluster-scoped objects */
	const char *name;        /* request.name; "" when the server has none yet */
	const char *username;    /* request.userInfo.username; "" when absent */
	struct jval groups;      /* request.userInfo.groups (an array, or missing) */
	struct jval object;      /* request.object (missing on DELETE) */
	struct jval old_object;  /* request.oldObject (UPDATE and DELETE) */
};

/**
 * adm_request_read() - read AdmissionRequest @req (borrowed; the request member of an
 * AdmissionReview) into @out, whose pointers borrow from @req's document.
 * Return: 0; -EINVAL when it has no operation among CREATE, UPDATE, DELETE, CONNECT or no
 * resource.resource, or a field of the wrong type (@err says which).
 */
int adm_request_read(struct jval req, struct adm_request *out /* OUT */, struct ll_err *err);

/* A Tenant as the view lends it. */
struct adm_tenant {
	const char *name;
	struct jval obj;               /* the Tenant object */
	const json_t *namespaces;      /* an object whose keys are the tenant's namespaces */
	const struct hm_policy *hosts; /* spec.allowed.hosts, built; NULL when it has none */
	int hosts_error;               /* 0, or hm_policy_new()'s error: every host is refused */
};

/*
 * What landlord knows. Each function gets the view's @ctx; each answer is lent until the
 * adm_decide() call that asked returns. All are required unless marked optional.
 */
struct adm_view_ops {
	/* The Tenant named @name, or NULL. */
	const struct adm_tenant *(*tenant)(const void *ctx, const char *name);
	/* The tenant that namespace @ns belongs to (its landlord.dev/tenant label), or NULL. */
	const struct adm_tenant *(*tenant_of_namespace)(const void *ctx, const char *ns);
	/* Namespace @ns as cached (labels at least), or the missing value when it does not exist.
	 */
	struct jval (*namespace_obj)(const void *ctx, const char *ns);
	/*
	 * Optional: a tenant naming user or group @name (@kind "User", "Group") among its members,
	 * or with @kind "Owner/User", "Owner/Group" among its owners (a ServiceAccount owner as
	 * its user name): the keys adm_owner_keys() emits.
	 */
	const char *(*member_tenant)(const void *ctx, const char *kind, const char *name);
	/*
	 * A tenant other than @except that uses a host overlapping @host (hostmatch O1 with
	 * HM_ANY_LABELS), or NULL; *@other (OUT) is that tenant's host. Best effort: the caches
	 * of Ingresses and HTTPRoutes.
	 */
	const char *(*host_user)(const void *ctx, const char *host, const char *except,
	                         const char **other /* OUT */);
	/* A tenant other than @except whose spec claims namespace @ns, or NULL. */
	const char *(*namespace_claimant)(const void *ctx, const char *ns, const char *except);
	/* Whether Plan @plan exists; a tenant naming it (NULL: none). */
	bool (*plan_exists)(const void *ctx, const char *plan);
	/* Optional: Plan @plan's spec.maxNamespaces; -1 when unset or no such Plan. */
	long long (*plan_max_namespaces)(const void *ctx, const char *plan);
	const char *(*plan_user)(const void *ctx, const char *plan);
	/*
	 * The Template named @name (the whole object: render.h reads its spec), or the missing
	 * value when there is none.
	 */
	struct jval (*template_obj)(const void *ctx, const char *name);
	/* The LandlordConfig in force (never NULL: lcfg_defaults() when none). */
	const struct lcfg *(*config)(const void *ctx);
	/* The mode of family @f. */
	enum adm_mode (*mode)(const void *ctx, enum adm_family f);
	/* landlord's own user name ("system:serviceaccount:landlord-system:landlord"). */
	const char *(*self_user)(const void *ctx);
	/*
	 * Optional, both or neither: adm_decide() calls hold() before its first lookup and
	 * release() after its last, on the deciding thread. A view whose state changes while
	 * decisions run pins it there (webhook/cacheview.h takes a read lock), so that what it
	 * lends stays valid until adm_decide() returns.
	 */
	void (*hold)(const void *ctx);
	void (*release)(const void *ctx);
};

struct adm_view {
	const struct adm_view_ops *ops;
	const void *ctx;
};

#define ADM_WARNINGS_MAX 8
#define ADM_WARNING_MAX  512

struct adm_decision {
	bool allowed;
	int code;               /* 403 when denied (503: a namespace not cached yet), else 0 */
	enum adm_family family; /* the family that denied (when !allowed) */
	char message[DENIAL_MSG_MAX]; /* the denial; "" when allowed */
	unsigned audited;             /* bit 1 << family for each family that audited */
	size_t n_warnings;            /* warnings[0..n_warnings): audits, then notes */
	char warnings[ADM_WARNINGS_MAX][ADM_WARNING_MAX];
	size_t dropped_warnings; /* warnings past ADM_WARNINGS_MAX, not kept */
	/*
	 * A Namespace CREATE that joins a tenant (self-service namespaces): its tenant ("" when
	 * none), whether the mutating webhook must add the landlord.dev/tenant label, and the
	 * tenant's Plan's maxNamespaces (-1: none), under which the caller reserves a slot before
	 * admitting (webhook/reserve.h), so that concurrent creates cannot pass the limit.
	 */
	struct {
		char tenant[64];
		bool add_label;
		long long max;
	} ns;
	/*
	 * A TemplateInstance CREATE or UPDATE (not a subresource): the value the mutating webhook
	 * sets in the annotation landlord.dev/last-writer, "" otherwise. "privileged" for a
	 * privileged subject (LandlordConfig), "owner" for an owner of the namespace's tenant,
	 * "editor" for anyone else; landlord itself and the cluster's components (garbage
	 * collector...) keep the value the object had (UPDATE), which on a CREATE is "privileged"
	 * for landlord and "editor" for the others, and "editor" when there was none.
	 */
	char last_writer[16];
};

/**
 * adm_decide() - decide @rq under @view into @d (filled whole). Never fails: what cannot be
 * read in the object is a denial that says so. A request in a namespace of no tenant, and one
 * by landlord or a privileged subject, is allowed (Tenant and Plan objects excepted: their
 * rules hold for everyone); one in a namespace the view does not know (a cache behind the API
 * server) is refused with code 503, to be retried. Thread-safe as described above.
 */
void adm_decide(const struct adm_request *rq, const struct adm_view *view,
                struct adm_decision *d /* OUT */);

/**
 * adm_owner_keys() - emit the member keys of @tenant's owners: "Owner/User/<name>",
 * "Owner/Group/<name>" and "Owner/User/system:serviceaccount:<ns>:<name>", for a view's
 * member_tenant() index.
 */
void adm_owner_keys(struct jval tenant, void (*emit)(const char *key, void *ud), void *ud);

/**
 * adm_namespace_usage() - how many namespaces @tenant has, @ns excepted, counting in one look
 * at @view its namespaces (labelled), its spec's claims and the names in @slots (an object
 * whose keys are namespaces being created; NULL: none), each name once. Takes the view's
 * hold itself; thread-safe as adm_decide().
 */
size_t adm_namespace_usage(const struct adm_view *view, const char *tenant, const char *ns,
                           const json_t *slots);

#endif
