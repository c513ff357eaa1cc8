"""Games on a Dask cluster (`dask`) and its config model (`config`), apart from Dask."""
