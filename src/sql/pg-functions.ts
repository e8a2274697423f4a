/**
 * The functions a query may call on PostgreSQL: an ALLOW list of functions known to read only their
 * arguments (arithmetic, text, dates, aggregates, window functions, casts, JSON and arrays). Any other
 * name is refused by the guard with one line naming it. A deny list failed (issue 47): PostgreSQL has
 * thousands of functions and some run SQL given as text (ts_stat, ts_rewrite, query_to_xml), change the
 * session (set_config), or reach files and other sessions; a new one is not refused until someone
 * lists it. Deliberately absent: anything that takes SQL text, settings, locks, sequences, large
 * objects, files, signals, notifications, statistics resets, and the text-search functions that read
 * queries (ts_stat, ts_rewrite). The connection's READ ONLY transaction (postgres.ts) holds even when a
 * name here turns out wrong; this list is the fast refusal with a clear message.
 */

const LIST = `
abs cbrt ceil ceiling degrees div exp factorial floor gcd lcm ln log log10 min_scale mod pi power pow radians
round scale sign sqrt trim_scale trunc width_bucket random
acos acosd asin asind atan atand atan2 atan2d cos cosd cot cotd sin sind tan tand sinh cosh tanh asinh acosh atanh
ascii bit_length btrim char_length character_length chr concat concat_ws format initcap left length lower lpad
ltrim md5 normalize octet_length overlay position quote_ident quote_literal quote_nullable regexp_count
regexp_instr regexp_like regexp_match regexp_matches regexp_replace regexp_split_to_array regexp_split_to_table
regexp_substr repeat replace reverse right rpad rtrim split_part starts_with string_to_array string_to_table
strpos substr substring to_ascii to_hex translate trim upper unistr encode decode sha224 sha256 sha384 sha512
get_byte get_bit set_byte set_bit convert convert_from convert_to
to_char to_date to_number to_timestamp
age clock_timestamp current_date current_time current_timestamp date_bin date_part date_trunc extract isfinite
justify_days justify_hours justify_interval localtime localtimestamp make_date make_interval make_time
make_timestamp make_timestamptz now statement_timestamp timeofday transaction_timestamp timezone
count sum avg min max stddev stddev_pop stddev_samp variance var_pop var_samp bool_and bool_or every bit_and
bit_or bit_xor corr covar_pop covar_samp regr_avgx regr_avgy regr_count regr_intercept regr_r2 regr_slope
regr_sxx regr_sxy regr_syy percentile_cont percentile_disc mode string_agg array_agg json_agg jsonb_agg
json_object_agg jsonb_object_agg range_agg range_intersect_agg
row_number rank dense_rank percent_rank cume_dist ntile lag lead first_value last_value nth_value
coalesce nullif greatest least cast
int int2 int4 int8 integer smallint bigint float float4 float8 real numeric decimal text varchar char character
bpchar date time timestamp timestamptz interval bool boolean bit varbit bytea uuid json jsonb money name
array_append array_cat array_dims array_fill array_length array_lower array_ndims array_position array_positions
array_prepend array_remove array_replace array_to_string array_upper cardinality trim_array unnest
generate_series generate_subscripts
json_array_elements json_array_elements_text json_array_length json_build_array json_build_object json_each
json_each_text json_extract_path json_extract_path_text json_object json_object_keys json_strip_nulls json_typeof
jsonb_array_elements jsonb_array_elements_text jsonb_array_length jsonb_build_array jsonb_build_object jsonb_each
jsonb_each_text jsonb_extract_path jsonb_extract_path_text jsonb_object jsonb_object_keys jsonb_path_exists
jsonb_path_match jsonb_path_query jsonb_path_query_array jsonb_path_query_first jsonb_pretty jsonb_strip_nulls
jsonb_typeof to_json to_jsonb row_to_json array_to_json
lower_inc upper_inc lower_inf upper_inf isempty range_merge
pg_typeof num_nulls num_nonnulls pg_sleep
current_database current_schema current_schemas current_setting pg_backend_pid version
`;

/** Lower-case function names a query may call (unqualified or qualified with pg_catalog). */
export const PG_ALLOWED_FUNCTIONS: ReadonlySet<string> = new Set(LIST.trim().split(/\s+/));

/**
 * SQL words that stand before a parenthesis without being a function call: the grammar's own (IN (...),
 * OVER (...), FILTER (WHERE ...), WITHIN GROUP (...), CAST (... AS ...), ARRAY(...), ROW(...)), upper case.
 * Reserved in PostgreSQL, or grammar with no function of that name in pg_catalog.
 */
export const PG_PAREN_KEYWORDS: ReadonlySet<string> = new Set(
  (
    'AS IN EXISTS ANY ALL SOME ARRAY ROW ON USING FROM JOIN LATERAL SELECT WHERE AND OR NOT WHEN THEN ELSE BY ' +
    'HAVING CASE END IS LIKE ILIKE BETWEEN SYMMETRIC ASYMMETRIC SIMILAR ESCAPE TO UNION INTERSECT EXCEPT ' +
    'DISTINCT WITH VALUES LIMIT OFFSET FETCH ORDER GROUP GROUPING SETS ROLLUP CUBE OVER FILTER WITHIN ' +
    'OVERLAPS COLLATE MATERIALIZED RETURNING WINDOW PARTITION ROWS RANGE GROUPS PRECEDING FOLLOWING CURRENT ' +
    'UNBOUNDED EXCLUDE AT ZONE VARYING PRECISION DOUBLE'
  ).split(' '),
);
