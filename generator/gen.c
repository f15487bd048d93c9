/* Kernel generation: a sandboxed Lua state runs the templates. */
#include "gen.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <lauxlib.h>
#include <lua.h>
#include <lualib.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

#include "../runtime/mha_abi.h"
#include "../runtime/mha_cpu.h"
#include "fail.h"
#include "knobs.h"

#define PREFIX "templates/"

void (*mhagen_on_read)(const char *path);

/* Where templates come from during one generation. */
struct source {
	const char *dir; /* NULL: embedded */
};

/* What one generation may spend: Lua instructions and bytes of memory.
 * The largest kernel the spec limits allow (h 1024, dk = dv = 4096, every
 * mask, unrolled) takes under 2 million instructions and 2 MiB. */
#define HOOK_EVERY 1000               /* instructions between hook calls */
#ifndef MAX_STEPS /* the fuzz harnesses set lower limits */
#define MAX_STEPS 200000L             /* hook calls: 200 million instructions */
#endif
#ifndef MAX_BYTES
#define MAX_BYTES ((size_t)256 << 20) /* 256 MiB */
#endif

struct budget {
	lua_State *L;   /* once created */
	size_t bytes;   /* held by the Lua state now */
	long steps;     /* hook calls so far */
	int refused;    /* an allocation was refused */
	char where[256]; /* template position at the last hook call */
};

static void note_where(lua_State *L, struct budget *b);

/* The CPU-time watchdog.  The count hook stops runaway Lua code, but not a
 * library function running long in C (a string pattern that backtracks
 * without end): past the limit, SIGPROF ends the process with status 2 and
 * one line naming the template position last seen. */
#define CPU_SECONDS 20 /* default; MHAGEN_CPU_SECONDS in the environment */
static struct budget *volatile watched;
static volatile int watch_seconds;

/* write(2) all of s; async-signal-safe. */
static void say(const char *s)
{
	size_t n = strlen(s);

	while (n > 0) {
		ssize_t w = write(2, s, n);
		if (w <= 0)
			return;
		s += w;
		n -= (size_t)w;
	}
}

static void on_cpu_limit(int sig)
{
	char secs[24], *p = secs + sizeof secs - 1;
	int n = watch_seconds;

	(void)sig;
	/* the Lua state is idle in a C function or between instructions:
	 * reading its stack is safe enough on the way out */
	if (watched && watched->L)
		note_where(watched->L, watched);
	*p = '\0';
	do
		*--p = (char)('0' + n % 10);
	while ((n /= 10) > 0 && p > secs);
	say("mhagen: ");
	say(watched && watched->where[0] ? (const char *)watched->where
	                                  : "templates");
	say(": template runs too long (over ");
	say(p);
	say(" s of CPU time)\n");
	_exit(2);
}

/* An error outside any protected call (only running out of memory while
 * the state is set up can raise one): one line, status 2, no abort. */
static int on_panic(lua_State *L)
{
	const char *msg = lua_tostring(L, -1);

	say("mhagen: Lua: ");
	say(msg ? msg : "unprotected error");
	say("\n");
	_exit(2);
}

/* Arm the watchdog for budget b, saving what was there; disarm with
 * unwatch(). */
static void watch(struct budget *b, struct sigaction *old_sa,
                  struct itimerval *old_it)
{
	struct sigaction sa;
	struct itimerval it;
	const char *env = getenv("MHAGEN_CPU_SECONDS");
	long secs = env ? strtol(env, NULL, 10) : CPU_SECONDS;

	if (secs <= 0 || secs > 86400)
		secs = CPU_SECONDS;
	watch_seconds = (int)secs;
	watched = b;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_cpu_limit;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, old_sa);
	memset(&it, 0, sizeof it);
	it.it_value.tv_sec = secs;
	setitimer(ITIMER_PROF, &it, old_it);
}

static void unwatch(const struct sigaction *old_sa,
                    const struct itimerval *old_it)
{
	setitimer(ITIMER_PROF, old_it, NULL);
	sigaction(SIGPROF, old_sa, NULL);
	watched = NULL;
}

/* lua_Alloc within MAX_BYTES; a refused request makes Lua raise a memory
 * error, after noting which template asked. */
static void *alloc(void *ud, void *ptr, size_t osize, size_t nsize)
{
	struct budget *b = ud;
	void *p;

	if (!ptr)
		osize = 0; /* osize then holds the object's type */
	if (nsize == 0) {
		free(ptr);
		b->bytes -= osize;
		return NULL;
	}
	if (nsize > osize && nsize - osize > MAX_BYTES - b->bytes) {
		b->refused = 1;
		if (b->L)
			note_where(b->L, b); /* reads the stack, allocates nothing */
		return NULL;
	}
	p = realloc(ptr, nsize);
	if (p)
		b->bytes = b->bytes - osize + nsize;
	return p;
}

/* Note in b the innermost template position of the running code. */
static void note_where(lua_State *L, struct budget *b)
{
	lua_Debug ar;

	for (int level = 0; lua_getstack(L, level, &ar); ++level) {
		if (!lua_getinfo(L, "Sl", &ar) || ar.source[0] != '@' ||
		    ar.currentline <= 0)
			continue;
		snprintf(b->where, sizeof b->where, "%s:%d", ar.source + 1,
		         ar.currentline);
		return;
	}
}

/* Count hook: remember where the templates are; past MAX_STEPS, raise an
 * error at every call, so a template that catches it cannot go on. */
static void hook(lua_State *L, lua_Debug *ar)
{
	struct budget *b;

	(void)ar;
	lua_getallocf(L, (void **)&b);
	note_where(L, b);
	if (++b->steps > MAX_STEPS) {
		lua_sethook(L, hook, LUA_MASKCOUNT, 1);
		luaL_error(L, "%s: template runs too long (over %d million Lua "
		           "instructions)", b->where,
		           (int)(MAX_STEPS * HOOK_EVERY / 1000000));
	}
}

static const struct mhagen_file *embedded(const char *path)
{
	for (size_t i = 0; i < mhagen_ntemplates; ++i)
		if (strcmp(mhagen_templates[i].path, path) == 0)
			return &mhagen_templates[i];
	return NULL;
}

/* 1 when path is read from template_dir: a template, given a dir.  The
 * kernel contract (runtime/mha_abi.h) is always the embedded one. */
static int from_dir(const char *template_dir, const char *path)
{
	return template_dir && strncmp(path, PREFIX, strlen(PREFIX)) == 0;
}

/* Push the name a template is known by in messages: its path, or the file
 * under --template-dir. */
static void push_display(lua_State *L, const struct source *src,
                         const char *path)
{
	if (from_dir(src->dir, path))
		lua_pushfstring(L, "%s/%s", src->dir, path + strlen(PREFIX));
	else
		lua_pushstring(L, path);
}

/* Raise a Lua error without a position: the Lua caller adds the template
 * line that asked. */
static int raisef(lua_State *L, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	lua_pushvfstring(L, fmt, ap);
	va_end(ap);
	return lua_error(L);
}

/* mhagen.display(path) -> the name a template is known by in messages. */
static int l_display(lua_State *L)
{
	const struct source *src = lua_touserdata(L, lua_upvalueindex(1));

	push_display(L, src, luaL_checkstring(L, 1));
	return 1;
}

/* mhagen.source(path) -> text of a template file. */
static int l_source(lua_State *L)
{
	const struct source *src = lua_touserdata(L, lua_upvalueindex(1));
	const char *path = luaL_checkstring(L, 1);
	const struct mhagen_file *f;
	luaL_Buffer b;
	FILE *fp;
	size_t got;

	if (!from_dir(src->dir, path)) {
		f = embedded(path);
		if (!f)
			return raisef(L, "no template '%s'", path);
		lua_pushlstring(L, f->text, f->len);
		return 1;
	}
	if (strstr(path, ".."))
		return raisef(L, "no template '%s'", path);
	push_display(L, src, path);
	fp = fopen(lua_tostring(L, -1), "rb");
	if (!fp)
		return raisef(L, "cannot read template '%s': %s",
		                  lua_tostring(L, -1), strerror(errno));
	if (mhagen_on_read)
		mhagen_on_read(lua_tostring(L, -1));
	luaL_buffinit(L, &b);
	do {
		char *p = luaL_prepbuffer(&b);
		got = fread(p, 1, LUAL_BUFFERSIZE, fp);
		luaL_addsize(&b, got);
	} while (got > 0);
	if (ferror(fp)) {
		fclose(fp);
		return raisef(L, "cannot read template '%s'", path);
	}
	fclose(fp);
	luaL_pushresult(&b);
	return 1;
}

/* mhagen.targets() -> the names of the target tables, the files
 * templates/targets/NAME.lua, embedded or under --template-dir, in no
 * particular order. */
static int l_targets(lua_State *L)
{
	const struct source *src = lua_touserdata(L, lua_upvalueindex(1));
	static const char dir[] = PREFIX "targets/";
	const size_t dl = sizeof dir - 1;
	lua_Integer n = 0;
	struct dirent *e;
	DIR *d;

	lua_newtable(L);
	if (!src->dir) {
		for (size_t i = 0; i < mhagen_ntemplates; ++i) {
			const char *p = mhagen_templates[i].path;
			size_t len = strlen(p);
			if (strncmp(p, dir, dl) == 0 && len > dl + 4 &&
			    strcmp(p + len - 4, ".lua") == 0 && !strchr(p + dl, '/')) {
				lua_pushlstring(L, p + dl, len - dl - 4);
				lua_rawseti(L, -2, ++n);
			}
		}
		return 1;
	}
	push_display(L, src, dir);
	d = opendir(lua_tostring(L, -1));
	if (!d)
		return raisef(L, "cannot list targets in '%s': %s",
		              lua_tostring(L, -1), strerror(errno));
	lua_pop(L, 1);
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (e->d_name[0] != '.' && len > 4 &&
		    strcmp(e->d_name + len - 4, ".lua") == 0) {
			lua_pushlstring(L, e->d_name, len - 4);
			lua_rawseti(L, -2, ++n);
		}
	}
	closedir(d);
	return 1;
}

/* mhagen.compile(src, path, env) -> function.  Text chunks only, named
 * "@path" so Lua reports errors as path:line. */
static int l_compile(lua_State *L)
{
	const struct source *src = lua_touserdata(L, lua_upvalueindex(1));
	size_t len;
	const char *code = luaL_checklstring(L, 1, &len);
	const char *path = luaL_checkstring(L, 2);

	luaL_checktype(L, 3, LUA_TTABLE);
	lua_pushstring(L, "@");
	push_display(L, src, path);
	lua_concat(L, 2);
	if (luaL_loadbufferx(L, code, len, lua_tostring(L, -1), "t") != LUA_OK)
		return lua_error(L);
	lua_pushvalue(L, 3);
	lua_setupvalue(L, -2, 1); /* _ENV */
	return 1;
}

/* Message handler: keep Lua's "file:line: message"; with MHAGEN_TRACE set
 * in the environment, add the traceback for template developers. */
static int on_error(lua_State *L)
{
	const char *msg = lua_tostring(L, 1);

	if (!msg)
		msg = lua_pushfstring(L, "(error object is a %s value)",
		                      luaL_typename(L, 1));
	if (getenv("MHAGEN_TRACE"))
		luaL_traceback(L, L, msg, 1);
	else
		lua_pushstring(L, msg);
	return 1;
}

/* The single protected-call path: call the function below nargs
 * arguments, leaving nres results, or copy the one-line error into err. */
static int pcall(lua_State *L, int nargs, int nres, char *err)
{
	int base = lua_gettop(L) - nargs;
	int rc;

	lua_pushcfunction(L, on_error);
	lua_insert(L, base);
	rc = lua_pcall(L, nargs, nres, base);
	lua_remove(L, base);
	if (rc == LUA_ERRMEM) {
		struct budget *b;
		lua_getallocf(L, (void **)&b);
		mhagen_fail(err, "%s: template %s (limit %zu MiB)",
		            b->where[0] ? b->where : "templates",
		            b->refused ? "needs too much memory" : "ran out of memory",
		            MAX_BYTES >> 20);
		lua_pop(L, 1);
		return -1;
	}
	if (rc != LUA_OK) {
		const char *m = lua_tostring(L, -1);
		mhagen_fail(err, "%s", m ? m : "unknown Lua error");
		/* one line unless a trace was asked for */
		if (!getenv("MHAGEN_TRACE"))
			err[strcspn(err, "\n")] = '\0';
		lua_pop(L, 1);
		return -1;
	}
	return 0;
}

/* Build the sandbox: only what generation needs.  Leaves it on the stack. */
static void push_sandbox(lua_State *L, struct source *src)
{
	static const char *const base[] = {
		"assert", "error", "ipairs", "next", "pairs", "pcall", "rawequal",
		"rawget", "rawlen", "rawset", "select", "setmetatable",
		"getmetatable", "tonumber", "tostring", "type", "xpcall", NULL,
	};
	static const char *const libs[] = {"string", "table", "math", "utf8", NULL};

	lua_newtable(L);
	for (int i = 0; base[i]; ++i) {
		lua_getglobal(L, base[i]);
		lua_setfield(L, -2, base[i]);
	}
	for (int i = 0; libs[i]; ++i) {
		lua_newtable(L); /* a copy, so templates cannot patch the real one */
		lua_getglobal(L, libs[i]);
		lua_pushnil(L);
		while (lua_next(L, -2)) {
			lua_pushvalue(L, -2);
			lua_insert(L, -2);
			lua_settable(L, -5);
		}
		lua_pop(L, 1);
		lua_setfield(L, -2, libs[i]);
	}
	lua_newtable(L);
	lua_pushlightuserdata(L, src);
	lua_pushcclosure(L, l_source, 1);
	lua_setfield(L, -2, "source");
	lua_pushlightuserdata(L, src);
	lua_pushcclosure(L, l_compile, 1);
	lua_setfield(L, -2, "compile");
	lua_pushlightuserdata(L, src);
	lua_pushcclosure(L, l_display, 1);
	lua_setfield(L, -2, "display");
	lua_pushlightuserdata(L, src);
	lua_pushcclosure(L, l_targets, 1);
	lua_setfield(L, -2, "targets");
	lua_setfield(L, -2, "mhagen");
	/* strings index the sandbox's copy of the string library */
	lua_pushliteral(L, "");
	lua_getmetatable(L, -1);
	lua_getfield(L, -3, "string");
	lua_setfield(L, -2, "__index");
	lua_pop(L, 2);
	lua_pushvalue(L, -1);
	lua_setfield(L, -2, "_G");
}

static void set_num(lua_State *L, const char *k, double v)
{
	lua_pushnumber(L, v);
	lua_setfield(L, -2, k);
}

static void set_int(lua_State *L, const char *k, long v)
{
	lua_pushinteger(L, v);
	lua_setfield(L, -2, k);
}

static void set_str(lua_State *L, const char *k, const char *v)
{
	lua_pushstring(L, v);
	lua_setfield(L, -2, k);
}

static void set_bool(lua_State *L, const char *k, int v)
{
	lua_pushboolean(L, v);
	lua_setfield(L, -2, k);
}

/* The spec as the templates see it; each knob under its field name, a
 * word knob as its word. */
static void push_spec(lua_State *L, const struct mha_spec *s)
{
	char buf[1024];

	lua_newtable(L);
	set_int(L, "h", s->h);
	set_int(L, "kv_heads", s->kv_heads);
	set_int(L, "dk", s->dk);
	set_int(L, "dv", s->dv);
	set_int(L, "seq_q", s->seq_q);
	set_int(L, "seq_kv", s->seq_kv);
	set_int(L, "window", s->window);
	set_int(L, "window_left", s->window_left);
	set_int(L, "window_right", s->window_right);
	set_int(L, "mask_bits", (long)s->mask);
	/* S.mask_b, S.mask_h: the bias's and boolean mask's leading batch and
	 * head dimensions */
	set_bool(L, "mask_b", (s->mask_dims & MHA_DIMS_BATCH) != 0);
	set_bool(L, "mask_h", (s->mask_dims & MHA_DIMS_HEAD) != 0);
	set_int(L, "mask_dims", (long)s->mask_dims);
	/* S.causal, S.padding, ...: one boolean per mask; S.masks, the words
	 * of those set, in order */
	{
		lua_Integer n = 0;
		lua_newtable(L);
		for (int i = 0; i < MHA_MASK_N; ++i)
			if (s->mask & (1u << i)) {
				lua_pushstring(L, mha_mask_words[i]);
				lua_rawseti(L, -2, ++n);
			}
		lua_setfield(L, -2, "masks");
	}
	for (int i = 0; i < MHA_MASK_N; ++i)
		set_bool(L, mha_mask_words[i], (s->mask & (1u << i)) != 0);
	set_str(L, "align", s->align == MHA_ALIGN_TOP_LEFT ? "top-left"
	                                                   : "bottom-right");
	set_str(L, "layout", mha_layout_words[s->layout]);
	set_str(L, "packed", mha_packed_words[s->packed]);
	set_str(L, "varlen", mha_varlen_words[s->varlen]);
	/* S.dtype: "f32", "f16" or "bf16", how q and out are stored;
	 * S.kv_dtype: the same or "q8", how k and v are */
	set_str(L, "dtype", mha_dtype_words[s->dtype]);
	set_str(L, "kv_dtype", mha_dtype_words[s->kv_dtype]);
	set_num(L, "scale", (double)(float)mha_spec_scale(s));
	set_bool(L, "scale_default", !(s->scale > 0.0));
	set_bool(L, "weights", s->weights);
	/* score modifiers: S.softcap and S.max_bias 0 when unset (floats),
	 * S.alibi "none", "slopes" or "max-bias", S.sinks */
	set_num(L, "softcap", (double)(float)s->softcap);
	set_num(L, "max_bias", (double)(float)s->max_bias);
	set_str(L, "alibi", s->alibi ? "slopes" : s->max_bias > 0.0 ? "max-bias"
	                                                            : "none");
	set_bool(L, "sinks", s->sinks);
	set_bool(L, "lse", s->lse);
	/* the layer (--embed): S.embed 0 for an attention kernel */
	set_int(L, "embed", s->embed);
	set_int(L, "kdim", s->kdim);
	set_int(L, "vdim", s->vdim);
	set_bool(L, "cross", s->cross);
	set_bool(L, "proj_bias", s->proj_bias);
	set_int(L, "kv_cache", s->kv_cache);
	set_bool(L, "add_bias_kv", s->add_bias_kv);
	set_bool(L, "add_zero_attn", s->add_zero_attn);
	set_str(L, "target", s->target);
	set_str(L, "name", s->name);
	for (int k = 0; k < MHA_KNOB_N; ++k) {
		const struct mha_knob_def *d = &mha_knob_table[k];
		if (d->words)
			set_str(L, d->lua, d->words[mha_knob_get(s, k)]);
		else
			set_int(L, d->lua, mha_knob_get(s, k));
	}
	mha_spec_command(s, buf, sizeof buf);
	set_str(L, "command", buf);
	set_str(L, "version", MHAGEN_VERSION);
}

/* Run fn with main.lua's module (what the chunk returned) on top of a
 * fresh sandboxed state, within the instruction, memory and CPU-time
 * budgets.  fn returns 0 or -1 with err filled. */
static int with_main(const char *template_dir,
                     int (*fn)(lua_State *L, void *ud, char *err), void *ud,
                     char *err)
{
	struct source src = {template_dir};
	struct budget budget = {NULL, 0, 0, 0, ""};
	struct sigaction old_sa;
	struct itimerval old_it;
	lua_State *L = lua_newstate(alloc, &budget);
	int rc = -1;

	if (!L) {
		mhagen_fail(err, "out of memory starting Lua");
		return -1;
	}
	lua_atpanic(L, on_panic);
	budget.L = L;
	lua_sethook(L, hook, LUA_MASKCOUNT, HOOK_EVERY);
	watch(&budget, &old_sa, &old_it);
	luaL_requiref(L, "_G", luaopen_base, 1);
	luaL_requiref(L, LUA_STRLIBNAME, luaopen_string, 1);
	luaL_requiref(L, LUA_TABLIBNAME, luaopen_table, 1);
	luaL_requiref(L, LUA_MATHLIBNAME, luaopen_math, 1);
	luaL_requiref(L, LUA_UTF8LIBNAME, luaopen_utf8, 1);
	lua_settop(L, 0);
	/* strings index the string library through their metatable: take
	 * dump out of the real one so no template can reach it */
	lua_getglobal(L, "string");
	lua_pushnil(L);
	lua_setfield(L, -2, "dump");
	lua_pop(L, 1);

	push_sandbox(L, &src);                        /* env */
	lua_getfield(L, -1, "mhagen");
	lua_getfield(L, -1, "compile");               /* env m compile */
	lua_getfield(L, -2, "source");
	lua_pushstring(L, PREFIX "main.lua");
	if (pcall(L, 1, 1, err))                      /* env m compile text */
		goto done;
	lua_pushstring(L, PREFIX "main.lua");
	lua_pushvalue(L, 1);
	if (pcall(L, 3, 1, err))                      /* env m chunk */
		goto done;
	if (pcall(L, 0, 1, err))                      /* env m module */
		goto done;
	rc = fn(L, ud, err);
done:
	lua_close(L);
	unwatch(&old_sa, &old_it);
	return rc;
}

/* Push field name of the module on top (a table of functions; a module
 * that is a function is generate alone).  0, or -1 with err. */
static int push_entry(lua_State *L, const char *name, char *err)
{
	if (lua_isfunction(L, -1) && strcmp(name, "generate") == 0) {
		lua_pushvalue(L, -1);
		return 0;
	}
	if (lua_istable(L, -1)) {
		lua_getfield(L, -1, name);
		if (lua_isfunction(L, -1))
			return 0;
		lua_pop(L, 1);
	}
	if (strcmp(name, "generate") == 0)
		mhagen_fail(err, PREFIX "main.lua: must return a function");
	else
		mhagen_fail(err, PREFIX "main.lua: must return a table with a "
		            "function '%s'", name);
	return -1;
}

/* What one mhagen_generate call asks and gets. */
struct gen_call {
	const struct mha_spec *s;
	const char *what;
	char *out;
	size_t len;
};

static int call_generate(lua_State *L, void *ud, char *err)
{
	struct gen_call *g = ud;
	const char *text;

	if (push_entry(L, "generate", err))
		return -1;
	push_spec(L, g->s);
	lua_pushstring(L, g->what);
	if (pcall(L, 2, 1, err))
		return -1;
	text = lua_tolstring(L, -1, &g->len);
	if (!text) {
		mhagen_fail(err, PREFIX "main.lua: generate returned no text");
		return -1;
	}
	g->out = malloc(g->len + 1);
	if (!g->out) {
		mhagen_fail(err, "out of memory");
		return -1;
	}
	memcpy(g->out, text, g->len + 1);
	return 0;
}

int mhagen_generate(const struct mha_spec *s, const char *what,
                    const char *template_dir, char **out, size_t *len,
                    char *err)
{
	struct gen_call g = {s, what, NULL, 0};
	int rc = with_main(template_dir, call_generate, &g, err);

	*out = rc ? NULL : g.out;
	*len = rc ? 0 : g.len;
	if (rc)
		free(g.out);
	return rc;
}

/* What one mhagen_plan call asks and gets. */
struct plan_call {
	const struct mha_spec *s;
	struct mha_plan *p;
};

/* The plan's algorithm, then each number it reports for that algorithm,
 * read from the table main.lua's plan returns by the knobs' field names. */
static int call_plan(lua_State *L, void *ud, char *err)
{
	struct plan_call *c = ud;
	struct mha_plan *p = c->p;
	const struct mha_knob_def *algo = &mha_knob_table[MHA_KNOB_ALGO];
	const char *word;
	int t;

	if (push_entry(L, "plan", err))
		return -1;
	push_spec(L, c->s);
	if (pcall(L, 1, 1, err))
		return -1;
	t = lua_gettop(L);
	if (!lua_istable(L, t)) {
		mhagen_fail(err, PREFIX "main.lua: plan returned no table");
		return -1;
	}
	memset(p, 0, sizeof *p);
	lua_getfield(L, t, algo->lua);
	word = lua_type(L, -1) == LUA_TSTRING ? lua_tostring(L, -1) : "";
	for (int a = MHA_ALGO_TILED; a < MHA_ALGO_N; ++a)
		if (strcmp(word, algo->words[a]) == 0)
			p->algo = a;
	lua_pop(L, 1);
	if (p->algo == MHA_ALGO_AUTO) {
		mhagen_fail(err, PREFIX "main.lua: plan: %s must be %s or %s",
		            algo->lua, algo->words[MHA_ALGO_TILED],
		            algo->words[MHA_ALGO_ROWS]);
		return -1;
	}
	for (int k = 0; k < MHA_KNOB_N; ++k) {
		const struct mha_knob_def *d = &mha_knob_table[k];
		int ok;
		if (k == MHA_KNOB_ALGO || !d->plan ||
		    !(d->algos & MHA_ALGO_BIT(p->algo)))
			continue;
		lua_getfield(L, t, d->lua);
		p->v[k] = (long)lua_tointegerx(L, -1, &ok);
		lua_pop(L, 1);
		if (!ok) {
			mhagen_fail(err, PREFIX "main.lua: plan: %s must be an "
			            "integer", d->lua);
			return -1;
		}
	}
	lua_getfield(L, t, "unroll_k");
	lua_getfield(L, t, "unroll_v");
	p->unroll_k = lua_toboolean(L, -2);
	p->unroll_v = lua_toboolean(L, -1);
	return 0;
}

int mhagen_plan(const struct mha_spec *s, const char *template_dir,
                struct mha_plan *p, char *err)
{
	struct plan_call c = {s, p};

	return with_main(template_dir, call_plan, &c, err);
}

/* What one mhagen_targets call asks and gets. */
struct targets_call {
	struct mhagen_target *t;
	size_t max, n;
};

/* Copy string field k of the table on top into buf of size n; -1 (err
 * filled) when it does not fit. */
static int get_str(lua_State *L, const char *k, char *buf, size_t n,
                   const char *target, char *err)
{
	size_t len;
	const char *v;

	lua_getfield(L, -1, k);
	v = lua_tolstring(L, -1, &len);
	if (!v || len >= n) {
		mhagen_fail(err, "target '%s': %s must be a string of at "
		            "most %zu characters", target, k, n - 1);
		return -1;
	}
	memcpy(buf, v, len + 1);
	lua_pop(L, 1);
	return 0;
}

static int call_targets(lua_State *L, void *ud, char *err)
{
	struct targets_call *c = ud;
	const int mod = lua_gettop(L), m = mod - 1; /* module, mhagen */
	int names;
	lua_Integer n;

	lua_getfield(L, m, "targets");
	if (pcall(L, 0, 1, err))
		return -1;
	names = lua_gettop(L);
	lua_getglobal(L, "table");
	lua_getfield(L, -1, "sort");
	lua_pushvalue(L, names);
	if (pcall(L, 1, 0, err))
		return -1;
	lua_settop(L, names);
	n = (lua_Integer)lua_rawlen(L, names);
	if ((size_t)n > c->max) {
		mhagen_fail(err, "more than %zu target tables", c->max);
		return -1;
	}
	for (lua_Integer i = 1; i <= n; ++i) {
		struct mhagen_target *t = &c->t[i - 1];
		char name[64];
		lua_rawgeti(L, names, i);
		snprintf(name, sizeof name, "%s", lua_tostring(L, -1));
		lua_pop(L, 1);
		lua_pushvalue(L, mod);
		if (push_entry(L, "describe", err))
			return -1;
		lua_rawgeti(L, names, i);
		if (pcall(L, 1, 1, err))
			return -1;
		memset(t, 0, sizeof *t);
		if (get_str(L, "name", t->name, sizeof t->name, name, err) ||
		    get_str(L, "arch", t->arch, sizeof t->arch, name, err) ||
		    get_str(L, "guard", t->guard, sizeof t->guard, name, err) ||
		    get_str(L, "cpu", t->cpu, sizeof t->cpu, name, err) ||
		    get_str(L, "cflags", t->cflags, sizeof t->cflags, name, err) ||
		    get_str(L, "defaults", t->defaults, sizeof t->defaults, name,
		            err))
			return -1;
		lua_getfield(L, -1, "width");
		t->width = (long)lua_tointeger(L, -1);
		lua_getfield(L, -2, "rank");
		t->rank = (long)lua_tointeger(L, -1);
		lua_settop(L, names);
	}
	c->n = (size_t)n;
	return 0;
}

int mhagen_targets(const char *template_dir, struct mhagen_target *t,
                   size_t max, size_t *n, char *err)
{
	struct targets_call c = {t, max, 0};
	int rc = with_main(template_dir, call_targets, &c, err);

	*n = rc ? 0 : c.n;
	return rc;
}

const struct mhagen_target *mhagen_target_find(const struct mhagen_target *t,
                                               size_t n, const char *name)
{
	for (size_t i = 0; i < n; ++i)
		if (strcmp(t[i].name, name) == 0)
			return &t[i];
	return NULL;
}

const struct mhagen_target *mhagen_target_native(const struct mhagen_target *t,
                                                 size_t n)
{
	const struct mhagen_target *best = NULL;

	for (size_t i = 0; i < n; ++i)
		if (mha_cpu_has(t[i].cpu) && (!best || t[i].rank > best->rank))
			best = &t[i];
	return best;
}

int mhagen_resolve_target(struct mha_spec *s, const char *template_dir,
                          char *err)
{
	struct mhagen_target t[MHAGEN_TARGETS_MAX];
	const struct mhagen_target *best = NULL;
	size_t n;

	if (s->target[0] && strcmp(s->target, "native") != 0)
		return 0; /* checked when its table is loaded */
	if (mhagen_targets(template_dir, t, MHAGEN_TARGETS_MAX, &n, err))
		return -1;
	best = mhagen_target_native(t, n);
	if (!best) {
		mhagen_fail(err, "--target native: this CPU runs none of "
		            "the targets");
		return -1;
	}
	snprintf(s->target, sizeof s->target, "%s", best->name);
	return 0;
}

static uint64_t fnv1a(uint64_t h, const char *p, size_t n)
{
	for (size_t i = 0; i < n; ++i) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

int mhagen_template_hash(const char *template_dir, char *out, size_t n,
                         char *err)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (size_t i = 0; i < mhagen_ntemplates; ++i) {
		const struct mhagen_file *f = &mhagen_templates[i];
		h = fnv1a(h, f->path, strlen(f->path) + 1);
		if (!from_dir(template_dir, f->path)) {
			h = fnv1a(h, f->text, f->len);
			continue;
		}
		{
			char path[4096], buf[4096];
			size_t got;
			FILE *fp;
			snprintf(path, sizeof path, "%s/%s", template_dir,
			         f->path + strlen(PREFIX));
			fp = fopen(path, "rb");
			if (!fp) {
				mhagen_fail(err, "cannot read template '%.300s': %s",
				            path, strerror(errno));
				return -1;
			}
			if (mhagen_on_read)
				mhagen_on_read(path);
			while ((got = fread(buf, 1, sizeof buf, fp)) > 0)
				h = fnv1a(h, buf, got);
			fclose(fp);
		}
	}
	snprintf(out, n, "fnv1a64:%016llx", (unsigned long long)h);
	return 0;
}
