-- The per-rank tables of `summary TRACE --write-parquet ROOT` as six views,
-- every rank's part in each (the `rank=<r>` folders become a `rank`
-- column). DuckDB: set the root first, then read this file:
--
--   SET VARIABLE root = 'tables';
--   .read sql/tables.sql
--
-- The question files read only these views (and sql/matched.sql's), so
-- another engine runs them once it has registered the same names; Spark:
--   spark.read.parquet(f"{root}/kernels").createOrReplaceTempView("kernels")
-- and for `collectives` also .withColumnRenamed("group", "process_group").
-- `group` is a reserved word that DuckDB quotes with "..." and Spark with
-- `...`: renamed here, the question files need neither.
CREATE OR REPLACE TEMPORARY VIEW summary AS
SELECT * FROM read_parquet(getvariable('root') || '/summary/*/*.parquet', hive_partitioning = true);

CREATE OR REPLACE TEMPORARY VIEW kernels AS
SELECT * FROM read_parquet(getvariable('root') || '/kernels/*/*.parquet', hive_partitioning = true);

CREATE OR REPLACE TEMPORARY VIEW ops AS
SELECT * FROM read_parquet(getvariable('root') || '/ops/*/*.parquet', hive_partitioning = true);

CREATE OR REPLACE TEMPORARY VIEW phases AS
SELECT * FROM read_parquet(getvariable('root') || '/phases/*/*.parquet', hive_partitioning = true);

CREATE OR REPLACE TEMPORARY VIEW collectives AS
SELECT * RENAME ("group" AS process_group)
FROM read_parquet(getvariable('root') || '/collectives/*/*.parquet', hive_partitioning = true);

CREATE OR REPLACE TEMPORARY VIEW idle AS
SELECT * FROM read_parquet(getvariable('root') || '/idle/*/*.parquet', hive_partitioning = true);
