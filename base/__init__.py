"""The ground floor: what every package stands on (errors, paths on a store, inputs, atomic files, Parquet,
done-markers, digests, the workspace's layout, locks, names, DuckDB, child processes). It imports nothing above it."""
