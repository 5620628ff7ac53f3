"""PySpark integration: the DataFrame writer (``hudi_md.write(df, ...)``)."""
