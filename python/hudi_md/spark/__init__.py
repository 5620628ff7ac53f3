"""PySpark integration: the DataFrame writer (``hudi_md.write(df, ...)``), the ``hudi-md`` data
source's session wiring, and its planner.

>>> import hudi_md.spark
>>> spark = hudi_md.spark.configure(SparkSession.builder).getOrCreate()  # the shim jar of this Spark
>>> spark.read.format("hudi-md").load(path)
"""

from hudi_md.spark.distributed_plan import plan
from hudi_md.spark.session import configure, jar_name, jar_path

__all__ = ["configure", "jar_name", "jar_path", "plan"]
