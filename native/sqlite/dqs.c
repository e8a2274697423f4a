/*
 * A SQLite loadable extension that turns on double-quoted string literals (legacy "DQS") for the
 * connection that loads it. better-sqlite3 compiles its bundled SQLite with SQLITE_DQS=0, so
 * `WHERE name = "Bob"` is an error there; SQLite's default build, Python's sqlite3 and therefore the
 * official Spider and BIRD evaluators accept it (a double-quoted token that names no column is a
 * string). Built against better-sqlite3's own sqlite3ext.h so it matches the bundled SQLite exactly.
 * It only flips two per-connection flags: it registers no SQL function and leaves the
 * load_extension() SQL function disabled.
 */
#include "sqlite3ext.h"
SQLITE_EXTENSION_INIT1

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_agrodqs_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  SQLITE_EXTENSION_INIT2(pApi);
  (void)pzErrMsg;
  int rc = sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DML, 1, (int *)0);
  if (rc == SQLITE_OK) rc = sqlite3_db_config(db, SQLITE_DBCONFIG_DQS_DDL, 1, (int *)0);
  return rc;
}
