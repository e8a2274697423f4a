/*
 * agro's SQLite extension, loaded into every connection agro opens (src/sql/open-database.mjs). Built
 * against better-sqlite3's own sqlite3ext.h so it matches the bundled SQLite exactly. Two jobs:
 *
 * 1. Double-quoted string literals (legacy "DQS"). better-sqlite3 compiles its SQLite with SQLITE_DQS=0,
 *    so `WHERE name = "Bob"` is an error there; SQLite's default build, Python's sqlite3 and therefore the
 *    official Spider and BIRD evaluators accept it (a double-quoted token that names no column is a
 *    string). Two per-connection flags.
 *
 * 2. Query limits without killing the process. better-sqlite3 builds SQLite with
 *    SQLITE_OMIT_PROGRESS_CALLBACK and runs a query synchronously on the JS thread, so nothing in the
 *    process could stop a runaway query: the pool had to kill the SQL process and start another (~0.15 s of
 *    CPU each time). Here a watchdog thread calls sqlite3_interrupt(), which the VM checks on every jump,
 *    when the armed query passes its wall-clock deadline or its CPU budget (the CPU clock of the thread
 *    that armed it, Linux only). The query fails with SQLITE_INTERRUPT and the connection stays usable.
 *    Arming goes through the SQL function agro_limit(token, cpu_ms, wall_ms): the token is the value of
 *    the environment variable AGRO_SQL_LIMIT_TOKEN when the extension was first loaded, which a query
 *    cannot read, so a query cannot lift its own limit (without the variable the function refuses every
 *    call). 0 ms means no such limit; agro_limit(token, 0, 0) disarms. One armed query per process:
 *    agro's SQL processes run one query at a time.
 *
 * load_extension() as an SQL function stays disabled: better-sqlite3 enables extension loading through the
 * C API only.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* dladdr, before any system header */
#endif
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1

#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#define AGRO_LIMITS 1
#include <dlfcn.h>
#include <pthread.h>
#include <time.h>
#include <errno.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static int watchdog_started = 0;
static char token[128];
static int have_token = 0;
/* The armed query: its connection, deadlines (seconds on their clocks; 0 = none) and the armer's CPU clock. */
static sqlite3 *armed_db = 0;
static double wall_deadline = 0;
static double cpu_deadline = 0;
#ifdef __linux__
static clockid_t cpu_clock;
#endif

/* How often the watchdog reads the CPU clock while a CPU budget is armed. */
#define POLL_NS 2000000L
/* When the watchdog next wakes by itself (monotonic seconds; 0 = only when signalled). Arming signals it
 * only when the new query needs it earlier: a wake-up per query (a thread switch on each arm and disarm)
 * cost more than a small query itself. Disarming never signals: the watchdog finds nothing armed when it
 * wakes and goes back to waiting. */
static double wakes_at = 0;

static double seconds(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void *watchdog(void *unused) {
  (void)unused;
  pthread_mutex_lock(&lock);
  for (;;) {
    if (!armed_db) {
      wakes_at = 0;
      pthread_cond_wait(&wake, &lock);
      continue;
    }
    double now = seconds(CLOCK_MONOTONIC);
    int over = wall_deadline > 0 && now >= wall_deadline;
#ifdef __linux__
    if (!over && cpu_deadline > 0) {
      struct timespec t;
      /* The armer's thread may be gone (process exiting): then its clock cannot be read; do nothing. */
      if (clock_gettime(cpu_clock, &t) == 0) over = (double)t.tv_sec + (double)t.tv_nsec * 1e-9 >= cpu_deadline;
    }
#endif
    if (over) {
      sqlite3_interrupt(armed_db);
      armed_db = 0;
      continue;
    }
    /* Sleep until the wall deadline, or a short poll when a CPU budget is armed; re-arming wakes us early. */
    double until = wall_deadline > 0 ? wall_deadline : now + 3600;
    if (cpu_deadline > 0 && until > now + POLL_NS * 1e-9) until = now + POLL_NS * 1e-9;
    /* pthread_cond_timedwait takes CLOCK_REALTIME: convert the monotonic target to a realtime one. */
    wakes_at = until;
    double real = seconds(CLOCK_REALTIME) + (until - now);
    struct timespec ts;
    ts.tv_sec = (time_t)real;
    ts.tv_nsec = (long)((real - (double)ts.tv_sec) * 1e9);
    if (ts.tv_nsec >= 1000000000L) { ts.tv_sec += 1; ts.tv_nsec -= 1000000000L; }
    pthread_cond_timedwait(&wake, &lock, &ts);
  }
  return 0;
}

static void agro_limit(sqlite3_context *ctx, int argc, sqlite3_value **argv) {
  (void)argc;
  const unsigned char *given = sqlite3_value_text(argv[0]);
  if (!have_token || !given || strcmp((const char *)given, token) != 0) {
    sqlite3_result_error(ctx, "agro_limit: not authorized", -1);
    return;
  }
  double cpu_ms = sqlite3_value_double(argv[1]);
  double wall_ms = sqlite3_value_double(argv[2]);
  pthread_mutex_lock(&lock);
  if (!watchdog_started) {
    /* SQLite unloads an extension when the last connection that loaded it closes; the watchdog runs code
     * from this library for the life of the process, so pin it (one more reference that is never dropped). */
    Dl_info self;
    if (!dladdr((void *)agro_limit, &self) || !self.dli_fname || !dlopen(self.dli_fname, RTLD_NOW | RTLD_NODELETE)) {
      pthread_mutex_unlock(&lock);
      sqlite3_result_error(ctx, "agro_limit: cannot pin the extension in memory", -1);
      return;
    }
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, watchdog, 0) != 0) {
      pthread_attr_destroy(&attr);
      pthread_mutex_unlock(&lock);
      sqlite3_result_error(ctx, "agro_limit: cannot start the watchdog thread", -1);
      return;
    }
    pthread_attr_destroy(&attr);
    watchdog_started = 1;
  }
  wall_deadline = wall_ms > 0 ? seconds(CLOCK_MONOTONIC) + wall_ms / 1000 : 0;
  cpu_deadline = 0;
#ifdef __linux__
  if (cpu_ms > 0 && pthread_getcpuclockid(pthread_self(), &cpu_clock) == 0) cpu_deadline = seconds(cpu_clock) + cpu_ms / 1000;
#else
  (void)cpu_ms;
#endif
  armed_db = wall_deadline > 0 || cpu_deadline > 0 ? sqlite3_context_db_handle(ctx) : 0;
  if (armed_db) {
    /* The latest the watchdog may next look: the wall deadline, or one CPU poll from now. */
    double need = wall_deadline > 0 ? wall_deadline : 0;
    double poll = cpu_deadline > 0 ? seconds(CLOCK_MONOTONIC) + POLL_NS * 1e-9 : 0;
    if (poll > 0 && (need == 0 || poll < need)) need = poll;
    if (wakes_at == 0 || need < wakes_at) pthread_cond_signal(&wake);
  }
  pthread_mutex_unlock(&lock);
#ifdef __linux__
  sqlite3_result_int(ctx, 2); /* both limits enforced */
#else
  sqlite3_result_int(ctx, 1); /* the wall-clock limit only */
#endif
}
#endif

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_agrosqlite_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  (void)pzErrMsg;
  int rc = sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 1, (int *)0);
  if (rc == SQLITE_OK) rc = sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DDL, 1, (int *)0);
#ifdef AGRO_LIMITS
  if (rc == SQLITE_OK) {
    pthread_mutex_lock(&lock);
    if (!have_token) {
      const char *t = getenv("AGRO_SQL_LIMIT_TOKEN");
      if (t && *t && strlen(t) < sizeof token) {
        strcpy(token, t);
        have_token = 1;
      }
    }
    pthread_mutex_unlock(&lock);
    rc = sqlite3_create_function_v2(db, "agro_limit", 3, SQLITE_UTF8, 0, agro_limit, 0, 0, 0);
  }
#endif
  return rc;
}
