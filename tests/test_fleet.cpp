// The fleet's pieces without Slurm: GPU models to architectures, sinfo's lines, the plan file, the
// progress file, quoting for the batch scripts (tests/cli_fleet.sh runs them).
#include <catch2/catch.hpp>

#include "tests/fixtures.h"
#include "tuner/fleet.h"

#include <cstdlib>

using namespace reduce_tune;
using namespace reduce_tune::fleet;
using testing::TempDir;

TEST_CASE("fleet: a GRES GPU type names its architecture", "[fleet]") {
  CHECK(arch_of_gpu_type("h100") == "sm_90");
  CHECK(arch_of_gpu_type("nvidia_h100_80gb_hbm3") == "sm_90");
  CHECK(arch_of_gpu_type("A100-SXM4-80GB") == "sm_80");
  CHECK(arch_of_gpu_type("l40s") == "sm_89");
  CHECK(arch_of_gpu_type("tesla_v100") == "sm_70");
  CHECK(arch_of_gpu_type("rtx_a6000") == "sm_86");
  CHECK_FALSE(arch_of_gpu_type(""));
  CHECK_FALSE(arch_of_gpu_type("gpu"));
  CHECK_FALSE(arch_of_gpu_type("h1000")); // a word, not a prefix
}

TEST_CASE("fleet: sinfo's lines give the partition's GPUs and nodes, or nothing for an unknown one",
          "[fleet]") {
  auto p = parse_sinfo("gpu", "gpu*|gpu:h100:8(S:0,1),shard:h100:16|3\ngpu*|gpu:h100:4(S:0)|1\n");
  REQUIRE(p);
  CHECK(p->gpu_type == "h100");
  CHECK(p->gpus_per_node == 4); // the smallest node's count: the request fits every node
  CHECK(p->nodes == 4);
  p = parse_sinfo("cpu", "cpu|(null)|2\n");
  REQUIRE(p);
  CHECK(p->gpu_type.empty());
  CHECK(p->gpus_per_node == 0);
  p = parse_sinfo("odd", "odd|gpu:2|1\n");
  REQUIRE(p);
  CHECK(p->gpu_type.empty());
  CHECK(p->gpus_per_node == 2);
  CHECK_FALSE(parse_sinfo("nope", ""));
  CHECK_FALSE(parse_sinfo("gpu", "gpu2|gpu:h100:4|1\n"));
}

TEST_CASE("fleet: the plan survives its file; the scripts quote what they pass", "[fleet]") {
  TempDir t;
  Plan p;
  p.dir = t.path.string();
  p.binary = "/opt/reduce tune/bin/reduce-tune";
  p.partitions = {"a100", "h100"};
  p.tasks = {1, 2};
  p.gpus = {4, 8};
  p.tune_jobs = {"12", "13"};
  p.compile_job = "11";
  p.merge_job = "14";
  p.cpu_partition = "cpu";
  p.archs = {"sm_80", "sm_90"};
  p.tune_args = {"--problem", "rows", "--shapes", "it's 4x4"};
  p.compile_args = {"--problem", "rows"};
  p.sbatch_args = {"--account=x"};
  p.group_write = true;
  p.submitted = "2026-11-26T00:00:00Z";
  save(p);
  const Plan q = load(p.dir);
  CHECK(q.dir == p.dir);
  CHECK(q.binary == p.binary);
  CHECK(q.partitions == p.partitions);
  CHECK(q.tasks == p.tasks);
  CHECK(q.gpus == p.gpus);
  CHECK(q.tune_jobs == p.tune_jobs);
  CHECK(q.compile_job == "11");
  CHECK(q.merge_job == "14");
  CHECK(q.archs == p.archs);
  CHECK(q.tune_args == p.tune_args);
  CHECK(q.sbatch_args == p.sbatch_args);
  CHECK(q.group_write);
  CHECK_THROWS_WITH(load(t.file("none")), Catch::Contains("fleet.conf"));

  const std::string tune = tune_script(p, 1);
  CHECK_THAT(tune, Catch::Contains("bin='/opt/reduce tune/bin/reduce-tune'"));
  CHECK_THAT(tune, Catch::Contains("task='h100'-$index"));
  CHECK_THAT(tune, Catch::Contains("'--shapes' 'it'\\''s 4x4'"));
  CHECK_THAT(tune, Catch::Contains("umask 0002"));
  CHECK_THAT(compile_script(p), Catch::Contains("archs=( 'sm_80' 'sm_90' )"));
  CHECK_THAT(merge_script(p), Catch::Contains("fleet merge \"$dir\""));
  CHECK(shell_quote("a'b") == "'a'\\''b'");
}

TEST_CASE("fleet: the progress file keeps each GPU's points done of planned", "[fleet]") {
  TempDir t;
  const std::string f = t.file("gpu-0.progress");
  write_progress(f, {{0, 120, 4954, "measure", "", ""}, {1, 4954, 4954, "done", "NVIDIA H100 80GB HBM3", "GPU-1"}});
  const auto g = read_progress(f);
  REQUIRE(g.size() == 2);
  CHECK(g[0].done == 120);
  CHECK(g[0].total == 4954);
  CHECK(g[0].phase == "measure");
  CHECK(g[0].uuid.empty());
  CHECK(g[1].name == "NVIDIA H100 80GB HBM3");
  CHECK(g[1].uuid == "GPU-1");
  CHECK(g[1].phase == "done");
  CHECK(read_progress(t.file("none")).empty());
}

TEST_CASE("fleet: a fleet directory others, or the group unasked, may write is refused", "[fleet]") {
  TempDir t;
  Plan p;
  p.dir = (t.path / "f").string();
  make_layout(p);
  CHECK(std::filesystem::is_directory(t.path / "f" / "shards"));
  CHECK_FALSE(untrusted_dir(p.dir + "/cache", false));
  std::filesystem::permissions(p.dir + "/cache", std::filesystem::perms::group_write, std::filesystem::perm_options::add);
  CHECK_THAT(untrusted_dir(p.dir + "/cache", false).value_or(""), Catch::Contains("--group-write"));
  CHECK_FALSE(untrusted_dir(p.dir + "/cache", true));
  std::filesystem::permissions(p.dir + "/cache", std::filesystem::perms::others_write, std::filesystem::perm_options::add);
  CHECK_THAT(untrusted_dir(p.dir + "/cache", true).value_or(""), Catch::Contains("writable by other users"));
  CHECK_THROWS_WITH(make_layout(p), Catch::Contains(p.dir + "/cache"));
}
