// Megatron's pipeline split: the layout string, the virtual-stage keys, account_for_* with
// interleaving, and the errors for combinations Megatron rejects.
#include "plan/pipeline_layout.h"

#include <gtest/gtest.h>

#include "plan/validate.h"
#include "plan/plan.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

using test::error_of;

std::vector<VirtualStage> parse(const std::string& text) {
  std::vector<VirtualStage> out;
  std::string why;
  EXPECT_TRUE(parse_pipeline_layout(text, out, &why)) << why;
  return out;
}

std::string parse_error(const std::string& text) {
  std::vector<VirtualStage> out;
  std::string why;
  EXPECT_FALSE(parse_pipeline_layout(text, out, &why)) << text;
  return why;
}

TEST(PipelineLayoutParse, MegatronExample) {
  // DeepSeek-V3 on pp 16 × v 2: [E t t t] + 29 × [t t] + [m] + [L] = 32 stages, 3 + 58 = 61 t.
  const auto st = parse("Et*3|(tt|)*29,m|L");
  ASSERT_EQ(st.size(), 32u);
  EXPECT_EQ(st[0], (VirtualStage{true, false, 3, 0}));
  for (size_t i = 1; i <= 29; ++i) EXPECT_EQ(st[i], (VirtualStage{false, false, 2, 0})) << i;
  EXPECT_EQ(st[30], (VirtualStage{false, false, 0, 1}));
  EXPECT_EQ(st[31], (VirtualStage{false, true, 0, 0}));
}

// Layouts are kept per thread once parsed: the same text again gives the same stages or the same
// reason, and a refused text leaves the caller's stages as they were.
TEST(PipelineLayoutParse, ParsedAgainTheSame) {
  for (int round = 0; round < 3; ++round) {
    EXPECT_EQ(parse("Et*3|(tt|)*29,m|L").size(), 32u);
    EXPECT_EQ(parse_error("(tt|L"), "unmatched '(' at character 6");
    std::vector<VirtualStage> out = {VirtualStage{true, true, 7, 1}};
    EXPECT_FALSE(parse_pipeline_layout("Ex|L", out, nullptr));
    EXPECT_EQ(out, (std::vector<VirtualStage>{VirtualStage{true, true, 7, 1}}));
    EXPECT_EQ(parse("E|t|L").size(), 3u);
  }
}

TEST(PipelineLayoutParse, EmptyStagesNestedGroupsAndBlanks) {
  const auto st = parse("E| ((t*2)*2|)*2 ,|L");  // E, tttt, tttt, (empty), L
  ASSERT_EQ(st.size(), 5u);
  EXPECT_EQ(st[1].layers, 4);
  EXPECT_EQ(st[2].layers, 4);
  EXPECT_EQ(st[3], VirtualStage{});
  EXPECT_TRUE(st[4].loss);
}

TEST(PipelineLayoutParse, SyntaxErrorsSayWhere) {
  EXPECT_EQ(parse_error("Et*|L"), "'*' must be followed by a repeat count at character 4");
  EXPECT_EQ(parse_error("(tt|L"), "unmatched '(' at character 6");
  EXPECT_EQ(parse_error("tt)|L"), "unmatched ')' at character 3");
  EXPECT_EQ(parse_error("Ex|L"), "unknown letter 'x'; valid letters: E (embedding), t (decoder layer), m (MTP layer), "
                                 "L (output layer and loss), | (next stage) at character 2");
  // 1024 × 1025 letters: refused before anything is expanded.
  EXPECT_EQ(parse_error("(t*1024)*1025"), "expands to more than 1048576 letters at character 14");
  EXPECT_EQ(parse_error(std::string(100000, '(')), "groups nest deeper than 64 at character 65");
}

class PipelineStagesTest : public ::testing::Test {
 protected:
  ModelConfig m_ = test::preset_model("llama3-8b");  // 32 layers
  SystemConfig sys_ = test::preset_system("h100-sxm-80g");
  StrategyConfig s_ = load_strategy(R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8,
                                        "world_size": 8, "pp_size": 4, "tp_size": 2})", "s.json");
  const PlanSources src_{"m.json", "s.json", "y.json"};

  std::string first_issue() {
    const auto issues = validate_plan(m_, s_, sys_, src_);
    return issues.empty() ? test::kNoError : issues.front().str();
  }
};

TEST_F(PipelineStagesTest, LayoutSetsChunksAndVirtualStages) {
  // 8 stages on pp 4: stage i is chunk i/4 of rank i mod 4; 2 + 6·4 + 6 = 32 layers.
  s_.pipeline_model_parallel_layout = "Ett|t*4|t*4|t*4|t*4|t*4|t*4|t*6L";
  EXPECT_EQ(virtual_stages_per_rank(m_, s_), 2);
  const Plan p = resolve_plan(m_, s_, sys_, Mode::Default, src_);
  EXPECT_EQ(p.par.vpp, 2);
  EXPECT_EQ(p.schedule, ScheduleKind::Interleaved);
  EXPECT_EQ(p.chunks[0][0], (ChunkSpec{true, false, 2, 0, 0}));
  EXPECT_EQ(p.chunks[1][0].layers, 4);
  EXPECT_EQ(p.chunks[0][1].layers, 4);  // stage 4
  EXPECT_EQ(p.chunks[3][1], (ChunkSpec{false, true, 6, 0, 0}));
}

TEST_F(PipelineStagesTest, LayoutErrors) {
  s_.pipeline_model_parallel_layout = "Et*16|t*16L|";  // 3 stages
  EXPECT_EQ(first_issue(), "s.json: /pipeline_model_parallel_layout: lists 3 stages, not a multiple of pp_size (4): "
                           "stage i runs on rank i mod pp_size");
  s_.pipeline_model_parallel_layout = "t*8|Et*8|t*8|t*8L";
  EXPECT_EQ(first_issue(), "s.json: /pipeline_model_parallel_layout: needs one E (embedding), in the first stage");
  s_.pipeline_model_parallel_layout = "Et*8|t*8|t*8L|t*8";
  EXPECT_EQ(first_issue(), "s.json: /pipeline_model_parallel_layout: needs one L (output layer and loss), in the last stage");
  s_.pipeline_model_parallel_layout = "Et*8|t*8|t*8|t*7L";
  EXPECT_EQ(first_issue(), "s.json: /pipeline_model_parallel_layout: holds 31 decoder layers (t) but the model has "
                           "layer_num 32");
  s_.pipeline_model_parallel_layout = "Et*8|t*8|t*8|t*8mL";
  EXPECT_EQ(first_issue(), "s.json: /pipeline_model_parallel_layout: holds 1 MTP layers (m) but the model has no MTP "
                           "layers (mtp_num_layers 0)");
  s_.pipeline_model_parallel_layout = "Et*8|t*8|t*8|t*8L";
  s_.num_layers_in_first_pipeline_stage = 8;
  EXPECT_EQ(first_issue(), "s.json: /num_layers_in_first_pipeline_stage: cannot be combined with "
                           "pipeline_model_parallel_layout, which fixes the layer split and the virtual stages; remove it");
  s_.num_layers_in_first_pipeline_stage.reset();
  EXPECT_EQ(first_issue(), test::kNoError);
  EXPECT_EQ(validate_plan(m_, s_, sys_, src_, Mode::SimuMax12).front().str(),
            "s.json: /pipeline_model_parallel_layout: is not part of SimuMax v1.2; use the default mode");
}

TEST_F(PipelineStagesTest, AccountForCountsEmbeddingAndLossPerVirtualStage) {
  // Megatron get_num_layers_to_build: 30 layers + embedding + loss = 32 over pp 4 = 8 per rank,
  // 4 per chunk with v 2; the first virtual stage builds 4 − 1 = 3 (it holds the embedding), the
  // last 4 − 1 = 3 (it holds the loss): 3 + 4·6 + 3 = 30.
  m_.layer_num = 30;
  s_.interleaving_size = 2;
  s_.account_for_embedding_in_pipeline_split = true;
  s_.account_for_loss_in_pipeline_split = true;
  const Plan p = resolve_plan(m_, s_, sys_, Mode::Default, src_);
  EXPECT_EQ(p.chunks[0][0].layers, 3);
  EXPECT_EQ(p.chunks[0][1].layers, 4);
  EXPECT_EQ(p.chunks[3][0].layers, 4);
  EXPECT_EQ(p.chunks[3][1].layers, 3);
  // Without interleaving the first and last rank hold 8 − 1 = 7.
  s_.interleaving_size = 1;
  const Plan q = resolve_plan(m_, s_, sys_, Mode::Default, src_);
  EXPECT_EQ(q.chunks[0][0].layers, 7);
  EXPECT_EQ(q.chunks[1][0].layers, 8);
  EXPECT_EQ(q.chunks[3][0].layers, 7);
  s_.pp_size = 1;
  s_.world_size = 2;
  EXPECT_EQ(first_issue(), "s.json: /account_for_embedding_in_pipeline_split: changes nothing with pp_size 1 (the one "
                           "stage holds every layer); remove it");
}

TEST_F(PipelineStagesTest, VirtualStageKeys) {
  // --num-layers-per-virtual-pipeline-stage 4: 32 / 4 = 8 layers per rank, 8 / 4 = 2 chunks.
  s_.num_layers_per_virtual_pipeline_stage = 4;
  EXPECT_EQ(virtual_stages_per_rank(m_, s_), 2);
  EXPECT_EQ(resolve_plan(m_, s_, sys_, Mode::Default, src_).par.vpp, 2);
  s_.num_layers_per_virtual_pipeline_stage = 3;
  EXPECT_EQ(first_issue(), "s.json: /num_layers_per_virtual_pipeline_stage: 3 does not divide the layers of a pipeline "
                           "rank (32 layers over pp_size 4)");
  s_.num_layers_per_virtual_pipeline_stage = 4;
  s_.interleaving_size = 2;
  EXPECT_EQ(first_issue(), "s.json: /num_layers_per_virtual_pipeline_stage: cannot be combined with interleaving_size "
                           "(num_virtual_stages_per_pipeline_rank); give one");
  // Megatron's name for interleaving_size.
  const char* base = R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 8, )";
  EXPECT_EQ(load_strategy(std::string(base) + R"("num_virtual_stages_per_pipeline_rank": 3})", "s").interleaving_size, 3);
  EXPECT_EQ(error_of([&] {
              (void)load_strategy(std::string(base) + R"("num_virtual_stages_per_pipeline_rank": 3, "interleaving_size": 3})", "s");
            }),
            "s: /num_virtual_stages_per_pipeline_rank: is Megatron's name for interleaving_size; give one of the two");
}

TEST_F(PipelineStagesTest, GroupSizeNeedsInterleaving) {
  s_.microbatch_group_size_per_vp_stage = 4;
  EXPECT_EQ(first_issue(), "s.json: /microbatch_group_size_per_vp_stage: changes nothing without an interleaved "
                           "pipeline (one virtual stage per rank); remove it");
  s_.interleaving_size = 2;
  EXPECT_EQ(first_issue(), test::kNoError);
}

}  // namespace
}  // namespace trainsim
