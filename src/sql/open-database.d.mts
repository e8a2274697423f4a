import type Database from 'better-sqlite3';

export declare const AGRO_SQLITE_EXTENSION: string;
export declare const LEGACY_QUOTES_MISSING: string;
export declare function legacyQuotesAvailable(): boolean;
export declare function openDatabase(path: string, options?: Database.Options): Database.Database;
