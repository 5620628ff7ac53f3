// The `hudi-md` Spark data source shim (jvm-shim/), cross-built for two Spark lines:
//   Scala 2.12 -> Spark 3.5.x,  Scala 2.13 -> Spark 4.0.x.
// Spark, Arrow, Jackson and Hadoop are `provided`: they are on every Spark classpath, so the
// jar only holds the shim's own classes. Build both jars with scripts/build-shim.

val scala212 = "2.12.18" // the Scala of Spark 3.5.x
val scala213 = "2.13.16" // the Scala of Spark 4.0.x

def sparkVersionFor(scalaBinary: String): String = scalaBinary match {
  case "2.12" => "3.5.9"
  case _      => "4.0.4"
}

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
ThisBuild / scalaVersion := scala212

lazy val shim = (project in file("jvm-shim"))
  .settings(
    name := "hudi-md-spark",
    crossScalaVersions := Seq(scala212, scala213),
    libraryDependencies += ("org.apache.spark" %% "spark-sql" % sparkVersionFor(scalaBinaryVersion.value) % Provided)
      .excludeAll(notNeededToCompile: _*),
    scalacOptions ++= Seq("-deprecation", "-feature", "-unchecked", "-encoding", "UTF-8") ++
      (scalaBinaryVersion.value match {
        case "2.12" => Seq("-release", "8", "-target:jvm-1.8") // Spark 3.5 still runs on Java 8
        case _      => Seq("-release", "17")                    // Spark 4 needs Java 17
      }),
    // Spark 3.5 vs 4.x API differences, if any, go to scala-spark3/ and scala-spark4/.
    Compile / unmanagedSourceDirectories += {
      val dir = if (scalaBinaryVersion.value == "2.12") "scala-spark3" else "scala-spark4"
      (Compile / sourceDirectory).value / dir
    },
    // Small, reproducible jars: no Scala library, no docs/sources, fixed entry timestamps (sbt default).
    Compile / packageDoc / publishArtifact := false,
    Compile / packageSrc / publishArtifact := false,
    Compile / doc / sources := Nil,
    Compile / packageBin / packageOptions += Package.ManifestAttributes(
      "Spark-Line" -> sparkVersionFor(scalaBinaryVersion.value)
    ),
    Test / sources := Nil
  )

lazy val root = (project in file("."))
  .aggregate(shim)
  .settings(
    crossScalaVersions := Nil,
    publish / skip := true,
    Compile / sources := Nil,
    Test / sources := Nil
  )
