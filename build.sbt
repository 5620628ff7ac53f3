// The `hudi-md` Spark data source shim (jvm-shim/): one jar per Spark line, all compiled from the
// same sources (jvm-shim/src/main/scala) against that line's own Spark artifacts, so an API change
// of a line fails its build rather than a user's query. A Spark API difference goes to the
// smallest version-specific source dir: jvm-shim/src/main/scala-spark<major> (e.g. scala-spark4)
// or scala-spark<major>.<minor> (e.g. scala-spark4.3); none is needed today.
//
// The jar of line X.Y is `hudi-md-spark-X.Y_<scala binary>.jar` (scripts/build-shim copies it to
// python/hudi_md/jars/; python/hudi_md/spark/session.py picks it by the running Spark version).
// Spark, Arrow, Jackson and Hadoop are `provided`: they are on every Spark classpath, so a jar only
// holds the shim's own classes (and META-INF/LICENSE and NOTICE). Build them all with scripts/build-shim.

// One project per Spark line: shimFor(line, the newest release of the line on Maven Central (patch
// releases keep a line's binary API), that release's Scala). A release not on Maven Central (4.3.0
// is on PyPI only, so far) is compiled against the jars of the PyPI `pyspark` sdist with the given
// SHA-256 instead.
lazy val spark35 = shimFor("3.5", "3.5.9", "2.12.18")
lazy val spark40 = shimFor("4.0", "4.0.4", "2.13.16")
lazy val spark41 = shimFor("4.1", "4.1.3", "2.13.17")
lazy val spark42 = shimFor("4.2", "4.2.0", "2.13.18")
lazy val spark43 = shimFor("4.3", "4.3.0", "2.13.18",
  pypiSdistSha256 = Some("e8c517948eff7088a7aa07449aa8eafa4a15a8d50319de2525a6fd26622476c6"))

// Large runtime-only artifacts Spark pulls in transitively that compiling the shim never needs.
val notNeededToCompile = Seq(
  ExclusionRule("org.rocksdb"),
  ExclusionRule("org.fusesource.leveldbjni"),
  ExclusionRule("org.apache.hadoop", "hadoop-client-runtime"),
  ExclusionRule("com.github.luben"),
  ExclusionRule("org.apache.orc"),
  ExclusionRule("org.apache.hive"),
  ExclusionRule("org.apache.ivy"),
  ExclusionRule("org.apache.zookeeper"),
  ExclusionRule("org.apache.curator"),
  ExclusionRule("net.razorvine"),
  ExclusionRule("org.glassfish.jersey.core"),
  ExclusionRule("org.glassfish.jersey.containers"),
  ExclusionRule("org.glassfish.jersey.inject"),
  ExclusionRule("org.apache.avro"),
  ExclusionRule("com.google.crypto.tink"),
  ExclusionRule("org.apache.datasketches"),
  ExclusionRule("io.dropwizard.metrics"),
  ExclusionRule("org.eclipse.jetty"),
  ExclusionRule("com.clearspring.analytics"),
  ExclusionRule("net.sf.py4j")
)

ThisBuild / organization := "io.github.hudi-md"
ThisBuild / version := "0.1.0"

/** The jars of the `pyspark==<spark>` sdist from PyPI (pip checks `sha256`), unpacked once into
 *  build/spark-jars/<spark>/ (pip's cache keeps the download). */
def pypiSparkJars(root: File, spark: String, sha256: String, log: Logger): Seq[File] = {
  import scala.sys.process._
  val dir = root / "build" / "spark-jars" / spark
  val done = dir / ".unpacked"
  if (!done.exists) {
    IO.delete(dir)
    val download = dir / "download"
    val requirements = dir / "requirements.txt"
    IO.write(requirements, s"pyspark==$spark --hash=sha256:$sha256\n")
    val python = sys.env.getOrElse("PYTHON", "python3")
    log.info(s"Spark $spark is not on Maven Central: fetching pyspark==$spark from PyPI for its jars")
    val pip = Seq(python, "-m", "pip", "download", "--quiet", "--no-deps", "--no-binary", "pyspark",
      "--require-hashes", "-r", requirements.getPath, "-d", download.getPath)
    if (Process(pip, root).! != 0) sys.error(s"could not download pyspark==$spark from PyPI: ${pip.mkString(" ")}")
    val sdist = (download * "pyspark-*.tar.gz").get.headOption
      .getOrElse(sys.error(s"pip downloaded no pyspark-$spark.tar.gz into $download"))
    val untar = Seq("tar", "-xzf", sdist.getPath, "-C", dir.getPath, "--strip-components=3", "--wildcards",
      s"pyspark-$spark/deps/jars/*.jar")
    if (Process(untar, root).! != 0) sys.error(s"could not unpack the jars of $sdist")
    IO.delete(download)
    IO.touch(done)
  }
  // The compiler brings its own scala-library (the same Scala version).
  (dir * "*.jar").get.filterNot(_.getName.startsWith("scala-")).sortBy(_.getName)
}

/** The shim of Spark line `line` ("4.1"), compiled against Spark `spark` with Scala `scala`. */
def shimFor(line: String, spark: String, scala: String, pypiSdistSha256: Option[String] = None): Project = {
  val major = line.takeWhile(_ != '.')
  Project("spark" + line.filter(_.isDigit), file("jvm-shim"))
    .settings(
      name := s"hudi-md-spark-$line",
      moduleName := name.value, // keeps the dot: hudi-md-spark-4.1_2.13-<version>.jar
      scalaVersion := scala,
      crossScalaVersions := Seq(scala),
      // Every line's project shares jvm-shim/; each builds into its own target dir.
      target := baseDirectory.value / "target" / s"spark-$line",
      libraryDependencies ++= (pypiSdistSha256 match {
        case None    => Seq(("org.apache.spark" %% "spark-sql" % spark % Provided).excludeAll(notNeededToCompile: _*))
        case Some(_) => Nil
      }),
      Compile / unmanagedJars ++= (pypiSdistSha256 match {
        case None         => Nil
        case Some(sha256) => Attributed.blankSeq(pypiSparkJars((ThisBuild / baseDirectory).value, spark, sha256, streams.value.log))
      }),
      scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-encoding", "UTF-8") ++
        (major match {
          case "3" => Seq("-release", "8", "-target:jvm-1.8") // Spark 3.5 still runs on Java 8
          case _   => Seq("-release", "17")                    // Spark 4 needs Java 17
        }),
      // Version-specific sources, if any (directories that do not exist add nothing).
      Compile / unmanagedSourceDirectories ++= Seq(
        (Compile / sourceDirectory).value / s"scala-spark$major",
        (Compile / sourceDirectory).value / s"scala-spark$line"
      ),
      // Small, reproducible jars: no Scala library, no docs/sources, fixed entry timestamps (sbt default).
      Compile / packageDoc / publishArtifact := false,
      Compile / packageSrc / publishArtifact := false,
      Compile / doc / sources := Nil,
      Compile / packageBin / packageOptions += Package.ManifestAttributes(
        "Spark-Line" -> line,
        "Spark-Version" -> spark
      ),
      // The repository's LICENSE and NOTICE in every jar, where Apache's jars carry them. The jar
      // bundles no third-party class (packageBin holds the shim's own classes and resources; its
      // org.apache.spark.* classes are the shim's, placed there for Spark's package-private API),
      // so NOTICE needs nothing more. scripts/build-dist checks every jar in the wheel has them.
      Compile / packageBin / mappings ++= Seq(
        (ThisBuild / baseDirectory).value / "LICENSE" -> "META-INF/LICENSE",
        (ThisBuild / baseDirectory).value / "NOTICE" -> "META-INF/NOTICE"
      ),
      Test / sources := Nil
    )
}

lazy val root = (project in file("."))
  .aggregate(spark35, spark40, spark41, spark42, spark43)
  .settings(
    crossScalaVersions := Nil,
    publish / skip := true,
    Compile / sources := Nil,
    Test / sources := Nil
  )
