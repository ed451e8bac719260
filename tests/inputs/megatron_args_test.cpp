// Megatron-LM command lines: tokenizing, flag classification, and the prediction they give.
#include "test_estimate.h"
#include "inputs/megatron_args.h"

#include <gtest/gtest.h>

#include "inputs/plan_request.h"
#include "system/presets.h"
#include "plan/validate.h"
#include "core/error.h"
#include "estimate/estimate.h"
#include "test_errors.h"
#include "test_presets.h"

namespace trainsim {
namespace {

std::string data(const std::string& rel) { return std::string(TRAINSIM_TEST_DATA) + "/" + rel; }

ConfigText file(const std::string& rel) { return {read_file(data(rel)), data(rel)}; }

template <typename F>
std::string error_of(F f) {
  return test::error_of<Error>(f);
}

TEST(MegatronArgs, ShellWords) {
  const auto w = split_command_line("torchrun \\\n  a.py --x 'a b' \"c\"  # comment --y\n--z=1\n", "f");
  EXPECT_EQ(w, (std::vector<std::string>{"torchrun", "a.py", "--x", "a b", "c", "--z=1"}));
  EXPECT_EQ(error_of([] { (void)split_command_line("a.py\n--lr ${LR}\n", "f"); }),
            "f: line 2: unexpanded shell variable; replace '$...' by its value");
  EXPECT_EQ(error_of([] { (void)split_command_line("--x 'abc", "f"); }), "f: line 1: unterminated ' quote");
}

TEST(MegatronArgs, EmbeddedFlagTable) {
  const auto& flags = megatron_flags();
  EXPECT_EQ(flags.size(), 766u);  // 746 of Megatron-LM + 20 ModelOpt rows
  EXPECT_EQ(flags.at("--recompute-modules").kind, "list");
  EXPECT_EQ(flags.at("--fp8-recipe").choices,
            (std::vector<std::string>{"tensorwise", "delayed", "mxfp8", "blockwise", "custom"}));
}

TEST(MegatronArgs, UnknownAndMalformedFlags) {
  EXPECT_EQ(error_of([] { (void)parse_megatron_args("pretrain_gpt.py --num-layer 32", "args.txt"); }),
            "args.txt: --num-layer: not a Megatron-LM flag (core 0.15.3–0.17.1); did you mean '--num-layers'?");
  EXPECT_EQ(error_of([] { (void)parse_megatron_args("--num-layers x", "args.txt"); }),
            "args.txt: --num-layers: 'x' is not an integer");
  EXPECT_EQ(error_of([] { (void)parse_megatron_args("--fp8-recipe delay", "args.txt"); }),
            "args.txt: --fp8-recipe: 'delay' is not a valid choice; valid values: tensorwise, delayed, mxfp8, "
            "blockwise, custom; did you mean 'delayed'?");
  EXPECT_EQ(error_of([] { (void)parse_megatron_args("--bf16=1", "args.txt"); }), "args.txt: --bf16: takes no value");
  EXPECT_EQ(error_of([] { (void)parse_megatron_args("--seq-length", "args.txt"); }),
            "args.txt: --seq-length: needs a value");
  EXPECT_EQ(error_of([] { (void)parse_megatron_args("bash run.sh", "args.txt"); }),
            "args.txt: expected a Megatron-LM command line (torchrun ... pretrain_gpt.py --num-layers ...) or its "
            "flags, got 'bash'");
}

TEST(MegatronArgs, Classification) {
  const MegatronArgs a = parse_megatron_args(read_file(data("megatron/llama3.1-8b-16gpu.sh")), "cmd");
  EXPECT_EQ(a.world_size, 16);
  EXPECT_EQ(a.global_batch_size, 64);
  EXPECT_EQ(a.layers_per_virtual_stage, 4);
  EXPECT_TRUE(a.not_modeled.empty());
  EXPECT_EQ(a.strategy["overlap_param_gather"], true);
  EXPECT_EQ(a.strategy["tp_comm_overlap"], true);
  EXPECT_EQ(a.ignored,
            (std::vector<std::string>{"--position-embedding-type", "--rotary-base", "--max-position-embeddings",
                                      "--attention-backend", "--lr", "--min-lr", "--lr-decay-style",
                                      "--weight-decay", "--clip-grad", "--seed", "--log-interval", "--save",
                                      "--save-interval", "--data-path", "--split", "--tokenizer-type",
                                      "--tokenizer-model"}));
  EXPECT_EQ(a.model["kv_head_num"], 8);
  EXPECT_EQ(a.strategy["tp_size"], 2);
  EXPECT_EQ(a.strategy["zero_state"], 1);
}

TEST(MegatronArgs, LaunchersAndMoePatterns) {
  EXPECT_EQ(parse_megatron_args("srun --nodes=4 --ntasks-per-node=8 python pretrain_gpt.py --bf16", "f").world_size, 32);
  EXPECT_EQ(parse_megatron_args("srun -n 64 python pretrain_gpt.py --bf16", "f").world_size, 64);
  EXPECT_EQ(parse_megatron_args("python pretrain_gpt.py --bf16", "f").world_size, std::nullopt);
  const MegatronArgs ds = parse_megatron_args(
      "--num-layers 61 --num-experts 256 --moe-layer-freq ([0]*3+[1]*58) --multi-latent-attention", "f");
  EXPECT_EQ(ds.model["dense_layers"], 3);
  EXPECT_EQ(parse_megatron_args("--num-experts 8 --moe-layer-freq 1", "f").model["dense_layers"], 0);
  // Other patterns and every-k-th layers become the model's per-layer list / int.
  EXPECT_EQ(parse_megatron_args("--num-layers 4 --moe-layer-freq [1,0,1,0]", "f").model["moe_layer_freq"],
            nlohmann::json({1, 0, 1, 0}));
  EXPECT_EQ(parse_megatron_args("--num-experts 8 --moe-layer-freq 2", "f").model["moe_layer_freq"], 2);
  EXPECT_EQ(error_of([] { (void)parse_megatron_args("--num-layers 4 --moe-layer-freq [1,0,2,0]", "f"); }),
            "f: --moe-layer-freq: '[1,0,2,0]' is not an int or a pattern such as ([0]*3+[1]*58)");
  EXPECT_EQ(error_of([] { (void)parse_megatron_args("--num-layers 5 --moe-layer-freq [0]*3+[1]*58", "f"); }),
            "f: --moe-layer-freq: the pattern has 61 entries but --num-layers is 5");
}

TEST(MegatronArgs, RecomputeMapping) {
  const auto s = [](const std::string& args) { return parse_megatron_args(args, "f").strategy; };
  EXPECT_EQ(s("--recompute-granularity full --recompute-method block --recompute-num-layers 3")["recompute_layer_num"], 3);
  EXPECT_EQ(s("--recompute-activations")["recompute_granularity"], "sdp_only");
  const auto sel = s("--recompute-granularity selective --recompute-modules mlp layernorm");
  EXPECT_EQ(sel["megatron_recompute"], true);
  EXPECT_EQ(sel["megatron_recompute_modules"], nlohmann::json({"mlp", "layernorm"}));
  EXPECT_TRUE(parse_megatron_args("--recompute-granularity full --recompute-num-layers 1", "f").recompute_all_layers);
}

// Every switch of the Megatron-LM strategy guide lands in a strategy/model key or in not_modeled
// (none is silently ignored).
TEST(MegatronArgs, StrategyGuideFlagsAreClassified) {
  struct Case {
    const char* args;
    char where;  // 's' strategy key, 'm' model key, 'n' not modeled
    const char* key;
  };
  const Case cases[] = {
      {"--use-distributed-optimizer", 's', "zero_state"},
      {"--overlap-grad-reduce", 's', "overlap_grad_reduce"},
      {"--grad-reduce-in-bf16", 's', "grad_reduce_in_bf16"},
      {"--sequence-parallel", 's', "enable_sequence_parallel"},
      {"--tensor-model-parallel-size 2", 's', "tp_size"},
      {"--pipeline-model-parallel-size 2", 's', "pp_size"},
      {"--context-parallel-size 2", 's', "cp_size"},
      {"--expert-model-parallel-size 2", 's', "ep_size"},
      {"--expert-tensor-parallel-size 2", 's', "etp_size"},
      {"--num-virtual-stages-per-pipeline-rank 2", 's', "interleaving_size"},
      {"--microbatch-group-size-per-virtual-pipeline-stage 4", 's', "microbatch_group_size_per_vp_stage"},
      {"--no-overlap-p2p-communication", 's', "pp_comm_async"},
      {"--decoder-first-pipeline-num-layers 3", 's', "num_layers_in_first_pipeline_stage"},
      {"--decoder-last-pipeline-num-layers 3", 's', "num_layers_in_last_pipeline_stage"},
      {"--account-for-embedding-in-pipeline-split", 's', "account_for_embedding_in_pipeline_split"},
      {"--account-for-loss-in-pipeline-split", 's', "account_for_loss_in_pipeline_split"},
      {"--pipeline-model-parallel-layout Et*3|(tt|)*29,m|L", 's', "pipeline_model_parallel_layout"},
      {"--recompute-granularity full --recompute-method block --recompute-num-layers 2", 's', "recompute_layer_num"},
      {"--cross-entropy-loss-fusion", 's', "cross_entropy_loss_fusion"},
      {"--fp8-format hybrid", 's', "fp8"},
      {"--bf16", 's', "dtype"},
      {"--moe-expert-capacity-factor 1.5", 'm', "capacity"},
      {"--moe-pad-expert-input-to-capacity", 'm', "moe_pad_expert_input_to_capacity"},
      {"--moe-layer-freq 1", 'm', "dense_layers"},
      {"--ddp-bucket-size 40000000", 'n', ""},
      {"--overlap-param-gather", 's', "overlap_param_gather"},
      {"--use-megatron-fsdp --data-parallel-sharding-strategy optim_grads_params", 's', "data_parallel_sharding_strategy"},
      {"--tp-comm-overlap", 's', "tp_comm_overlap"},
      {"--hierarchical-context-parallel-sizes 2 4", 's', "hierarchical_context_parallel_sizes"},
      {"--moe-enable-deepep", 's', "moe_enable_deepep"},
      {"--moe-permute-fusion", 's', "moe_permute_fusion"},
      {"--moe-deepep-num-sms 24", 's', "moe_deepep_num_sms"},
      {"--moe-router-load-balancing-type sinkhorn", 's', "moe_router_load_balancing_type"},
      {"--overlap-moe-expert-parallel-comm", 's', "overlap_moe_expert_parallel_comm"},
      {"--moe-shared-expert-overlap", 's', "moe_shared_expert_overlap"},
      {"--offload-modules core_attn", 's', "offload_modules"},
      {"--optimizer-cpu-offload", 's', "optimizer_cpu_offload"},
      {"--overlap-cpu-optimizer-d2h-h2d", 'n', ""},
      {"--fp8-recipe blockwise", 's', "fp8_recipe"},
      {"--fp8-param-gather", 's', "fp8_param_gather"},
      {"--delay-wgrad-compute", 'n', ""},
      {"--cuda-graph-impl transformer_engine", 's', "cuda_graph_impl"},
      {"--enable-cuda-graph", 's', "enable_cuda_graph"},
      {"--external-cuda-graph", 's', "cuda_graph_impl"},
      {"--cuda-graph-impl local --cuda-graph-scope attn moe_router", 's', "cuda_graph_scope"},
      {"--no-check-for-nan-in-loss-and-grad", 's', "check_for_nan_in_loss_and_grad"},
      {"--optimizer-cuda-graph", 'n', ""},
      {"--use-megatron-fsdp", 's', "data_parallel_sharding_strategy"},
  };
  for (const auto& c : cases) {
    const MegatronArgs a = parse_megatron_args(std::string("--num-layers 8 --num-experts 4 ") + c.args, "f");
    if (c.where == 's') {
      EXPECT_TRUE(a.strategy.contains(c.key)) << c.args;
    } else if (c.where == 'm') {
      EXPECT_TRUE(a.model.contains(c.key)) << c.args;
    } else {
      EXPECT_EQ(a.not_modeled.size(), 1u) << c.args;
    }
    EXPECT_TRUE(a.ignored.empty()) << c.args;
  }
}

// A flag's value becomes JSON as Megatron-LM's argparse reads it: "052" is the integer 52 (a fuzzer
// found it aborting the parse: not a JSON number), a string value keeps its quotes (escaped), and
// what is not an integer stays an input error naming the flag.
TEST(MegatronArgs, ValuesBecomeJsonAsArgparseReadsThem) {
  EXPECT_EQ(parse_megatron_args("--num-layers 8 --kv-channels 052", "f").model["head_size"], 52);
  EXPECT_EQ(error_of([] { (void)parse_megatron_args("--num-layers 8 --fp8-recipe 'bl\"ock'", "f"); }),
            "f: --fp8-recipe: 'bl\"ock' is not a valid choice; valid values: tensorwise, delayed, mxfp8, blockwise, custom");
  EXPECT_EQ(error_of([] { (void)parse_megatron_args("--num-layers 8 --kv-channels x1", "f"); }),
            "f: --kv-channels: 'x1' is not an integer");
}

// Megatron FSDP: the sharding strategy is the ZeRO stage (it replaces the distributed optimizer's
// zero_state 1), no_shard by default; without --use-megatron-fsdp the sharding flag is not read.
TEST(MegatronArgs, MegatronFsdpShardsAsItsStrategySays) {
  const MegatronArgs fsdp = parse_megatron_args(
      "--num-layers 8 --use-distributed-optimizer --use-megatron-fsdp --data-parallel-sharding-strategy "
      "optim_grads_params",
      "f");
  EXPECT_EQ(fsdp.strategy["data_parallel_sharding_strategy"], "optim_grads_params");
  EXPECT_FALSE(fsdp.strategy.contains("zero_state"));
  EXPECT_TRUE(fsdp.not_modeled.empty());
  EXPECT_EQ(parse_megatron_args("--num-layers 8 --use-megatron-fsdp", "f").strategy["data_parallel_sharding_strategy"],
            "no_shard");
  const MegatronArgs plain =
      parse_megatron_args("--num-layers 8 --use-distributed-optimizer --data-parallel-sharding-strategy optim_grads", "f");
  EXPECT_FALSE(plain.strategy.contains("data_parallel_sharding_strategy"));
  EXPECT_EQ(plain.strategy["zero_state"], 1);
  EXPECT_EQ(plain.ignored, (std::vector<std::string>{"--data-parallel-sharding-strategy"}));
}

// The acceptance test: a torchrun command line predicts exactly what the equivalent strategy
// JSON predicts.
TEST(MegatronArgs, TorchrunLineEqualsStrategyJson) {
  PlanRequest from_cmd, from_json;
  from_cmd.hf_config = from_json.hf_config = file("hf/llama-3.1-8b/config.json");
  from_cmd.megatron = file("megatron/llama3.1-8b-16gpu.sh");
  from_json.strategy = file("megatron/llama3.1-8b-16gpu-strategy.json");
  const PlanConfigs a = build_plan(from_cmd, "", "");
  const PlanConfigs b = build_plan(from_json, "", "");
  EXPECT_EQ(strategy_to_json_text(a.strategy), strategy_to_json_text(b.strategy));

  const ConfigText sys_text = resolve_config("system", "h100-sxm-80g");
  const SystemConfig sys = load_system(sys_text.text, sys_text.source);
  (void)resolve_plan(a.model, a.strategy, sys, Mode::Default);
  const Estimate ea = estimate(a.model, a.strategy, sys);
  const Estimate eb = estimate(b.model, b.strategy, sys);
  EXPECT_GT(ea.iteration_time_s, 0);
  EXPECT_EQ(ea.iteration_time_s, eb.iteration_time_s);
  EXPECT_EQ(ea.mfu, eb.mfu);
  EXPECT_EQ(ea.tokens_per_s_per_gpu, eb.tokens_per_s_per_gpu);
  EXPECT_EQ(ea.straggler_ratio, eb.straggler_ratio);
  EXPECT_EQ(ea.global_batch_size, 64);
  ASSERT_EQ(ea.stages.size(), eb.stages.size());
  for (size_t i = 0; i < ea.stages.size(); ++i) {
    EXPECT_EQ(ea.stages[i].peak_alloc_bytes, eb.stages[i].peak_alloc_bytes);
    EXPECT_EQ(ea.stages[i].model_bytes, eb.stages[i].model_bytes);
  }
  ASSERT_EQ(ea.stage_times.size(), eb.stage_times.size());
  for (size_t i = 0; i < ea.stage_times.size(); ++i) EXPECT_EQ(ea.stage_times[i].total_s, eb.stage_times[i].total_s);
}

TEST(MegatronArgs, ModelFlagsMustAgreeWithTheModelFile) {
  PlanRequest r;
  r.hf_config = file("hf/llama-3.1-8b/config.json");
  r.megatron = ConfigText{"torchrun --nproc-per-node 8 pretrain_gpt.py --hidden-size 5120 --seq-length 4096 "
                          "--micro-batch-size 1",
                          "args.txt"};
  EXPECT_EQ(error_of([&] { (void)build_plan(r, "", ""); }),
            "args.txt: --hidden-size 5120: gives hidden_size = 5120 but " + data("hf/llama-3.1-8b/config.json") +
                " has 4096");
}

TEST(MegatronArgs, MegatronMoeDefaultsApplyToAModelFile) {
  PlanRequest r;
  r.hf_config = file("hf/mixtral-8x7b/config.json");
  r.megatron = ConfigText{"torchrun --nproc-per-node 8 pretrain_gpt.py --seq-length 4096 --micro-batch-size 1 "
                          "--expert-model-parallel-size 8 --moe-token-dispatcher-type alltoall",
                          "args.txt"};
  const PlanConfigs sequential = build_plan(r, "", "");
  EXPECT_EQ(sequential.model.group_linear_mode, "serial");  // no --moe-grouped-gemm: SequentialMLP
  EXPECT_FALSE(sequential.model.moe_pad_expert_input_to_capacity);
  EXPECT_EQ(sequential.strategy.etp_size, 1);  // expert TP follows TP (1)
  EXPECT_TRUE(sequential.not_modeled.empty());
  r.megatron->text += " --moe-grouped-gemm --moe-pad-expert-input-to-capacity --moe-expert-capacity-factor 1.25";
  const PlanConfigs grouped = build_plan(r, "", "");
  EXPECT_EQ(grouped.model.group_linear_mode, "parallel");
  EXPECT_TRUE(grouped.model.moe_pad_expert_input_to_capacity);
  EXPECT_EQ(grouped.model.capacity, 1.25);
}

// Pipeline switches from the command line reach the Plan as Megatron builds them.
TEST(MegatronArgs, PipelineLayoutAndVirtualStages) {
  PlanRequest r;
  const std::string base = "torchrun --nproc-per-node 8 pretrain_gpt.py --num-layers 30 --hidden-size 256 "
                           "--num-attention-heads 4 --vocab-size 1000 --seq-length 128 --micro-batch-size 1 "
                           "--global-batch-size 16 --pipeline-model-parallel-size 4 ";
  // 30 layers + embedding + loss = 32 over pp 4 = 8 per rank; 4 per virtual stage → v = 2.
  r.megatron = ConfigText{base + "--num-layers-per-virtual-pipeline-stage 4 --account-for-embedding-in-pipeline-split "
                                 "--account-for-loss-in-pipeline-split",
                          "args.txt"};
  PlanConfigs p = build_plan(r, "", "");
  EXPECT_EQ(p.strategy.interleaving_size, 2);
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  Plan plan = resolve_plan(p.model, p.strategy, sys, Mode::Default);
  EXPECT_EQ(plan.chunks[0][0].layers, 3);
  EXPECT_EQ(plan.chunks[3][1].layers, 3);
  // The layout string, quotes and all, becomes the strategy key; 8 stages on pp 4 → v = 2.
  r.megatron = ConfigText{base + "--pipeline-model-parallel-layout 'Et*2|(t*4|)*6,t*4L'", "args.txt"};
  p = build_plan(r, "", "");
  EXPECT_EQ(p.strategy.pipeline_model_parallel_layout, std::optional<std::string>("Et*2|(t*4|)*6,t*4L"));
  plan = resolve_plan(p.model, p.strategy, sys, Mode::Default);
  EXPECT_EQ(plan.par.vpp, 2);
  EXPECT_EQ(plan.chunks[0][0].layers, 2);
  EXPECT_EQ(plan.chunks[3][1].layers, 4);
  EXPECT_TRUE(plan.chunks[3][1].head);
}

// Context parallel and MoE dispatch flags land in the strategy with Megatron's defaults (p2p,
// allgather); the hierarchical sizes come as a list.
TEST(MegatronArgs, ContextParallelAndDispatcherFlags) {
  PlanRequest r;
  r.hf_config = file("hf/llama-3.1-8b/config.json");
  r.megatron = ConfigText{"torchrun --nproc-per-node 16 pretrain_gpt.py --seq-length 8192 --micro-batch-size 1 "
                          "--tensor-model-parallel-size 8 --context-parallel-size 2",
                          "args.txt"};
  EXPECT_EQ(build_plan(r, "", "").strategy.cp_comm_type, "p2p");
  r.megatron->text += " --cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes 1 2";
  const PlanConfigs h = build_plan(r, "", "");
  EXPECT_EQ(h.strategy.cp_comm_type, "a2a+p2p");
  EXPECT_EQ(h.strategy.hierarchical_context_parallel_sizes, (std::vector<int64_t>{1, 2}));

  PlanRequest moe;
  moe.hf_config = file("hf/mixtral-8x7b/config.json");
  moe.megatron = ConfigText{"torchrun --nproc-per-node 8 pretrain_gpt.py --seq-length 4096 --micro-batch-size 1 "
                            "--expert-model-parallel-size 8",
                            "args.txt"};
  EXPECT_EQ(build_plan(moe, "", "").strategy.moe_token_dispatcher_type, std::optional<std::string>("allgather"));
  moe.megatron->text += " --moe-token-dispatcher-type flex --moe-enable-deepep --moe-permute-fusion";
  const PlanConfigs flex = build_plan(moe, "", "");
  EXPECT_EQ(flex.strategy.moe_token_dispatcher_type, std::optional<std::string>("flex"));
  EXPECT_TRUE(flex.strategy.moe_enable_deepep);
  EXPECT_TRUE(flex.strategy.moe_permute_fusion);
  EXPECT_TRUE(flex.not_modeled.empty());

  // SimuMax v1.2 has a2a CP and all2all dispatch only: the flags stay warnings there.
  r.mode = moe.mode = Mode::SimuMax12;
  const PlanConfigs compat = build_plan(r, "", "");
  EXPECT_EQ(compat.strategy.cp_comm_type, "a2a");
  EXPECT_TRUE(compat.strategy.hierarchical_context_parallel_sizes.empty());
  ASSERT_EQ(compat.not_modeled.size(), 2u);
  EXPECT_EQ(compat.not_modeled[0], "--cp-comm-type a2a+p2p: SimuMax v1.2 has a2a only (simulated as a2a)");
  EXPECT_EQ(compat.not_modeled[1], "--hierarchical-context-parallel-sizes: not part of SimuMax v1.2");
  const PlanConfigs compat_moe = build_plan(moe, "", "");
  EXPECT_FALSE(compat_moe.strategy.moe_token_dispatcher_type.has_value());
  EXPECT_FALSE(compat_moe.strategy.moe_enable_deepep);
  EXPECT_EQ(compat_moe.not_modeled.size(), 3u);
}

TEST(MegatronArgs, ModelFromFlagsAlone) {
  PlanRequest r;
  r.megatron = ConfigText{"--num-layers 2 --hidden-size 256 --num-attention-heads 4 --vocab-size 1000 "
                          "--seq-length 128 --micro-batch-size 2 --global-batch-size 16",
                          "args.txt"};
  EXPECT_EQ(error_of([&] { (void)build_plan(r, "", ""); }),
            "args.txt: the world size is unknown: give a torchrun/srun prefix (--nproc-per-node, --nnodes), "
            "--world-size or --dp");
  r.overrides = {{"world_size", "4", "--world-size 4"}};
  const PlanConfigs p = build_plan(r, "", "");
  EXPECT_EQ(p.model.intermediate_size, 1024);  // 4h without SwiGLU
  EXPECT_EQ(p.model.head_size, 64);
  EXPECT_EQ(p.model.normalization, "LayerNorm");
  EXPECT_TRUE(p.model.tie_word_embeddings);
  EXPECT_TRUE(p.model.qkv_bias);
  EXPECT_EQ(p.strategy.dtype, "fp32");
  EXPECT_EQ(p.strategy.micro_batch_num, 2);  // 16 / (2 · dp 4)
  r.megatron->text += " --swiglu";
  EXPECT_EQ(build_plan(r, "", "").model.intermediate_size, 640);  // int(4·256·2/3 / 64)·64
}

}  // namespace
}  // namespace trainsim

namespace trainsim {
namespace {

// Memory switches: core_attn joins the other selective modules (default mode), and the fused
// cross-entropy implementation is read from the flag (the listed releases offer native and te).
TEST(MegatronArgs, MemorySwitches) {
  const MegatronArgs sel = parse_megatron_args("--recompute-granularity selective --recompute-modules core_attn mlp", "f");
  EXPECT_EQ(sel.strategy["megatron_recompute_modules"], nlohmann::json({"core_attn", "mlp"}));
  EXPECT_TRUE(sel.not_modeled.empty());
  const MegatronArgs ce = parse_megatron_args("--cross-entropy-loss-fusion --cross-entropy-fusion-impl te", "f");
  EXPECT_EQ(ce.strategy["cross_entropy_fusion_impl"], "te");
  EXPECT_EQ(ce.strategy["cross_entropy_loss_fusion"], true);
  const MegatronArgs uni = parse_megatron_args("--recompute-granularity full --recompute-method uniform "
                                               "--recompute-num-layers 2", "f");
  EXPECT_EQ(uni.strategy["recompute_unit_layers"], 2);
  EXPECT_TRUE(uni.not_modeled.empty());
}

}  // namespace
}  // namespace trainsim

namespace trainsim {
namespace {

// A MoE command line runs Megatron core's probabilities path (>= 0.14): the probabilities travel
// with the tokens and are applied in the experts' activation, so the unpermutation keeps nothing.
// Mixtral 8x7B, sequence 4096, micro-batch 1, tp 1, ep 8: P = k·T = 2·4096 routed tokens per
// layer; the old path kept the experts' output, P·H·2 = 8192·4096·2 B = 64 MiB per layer, 2 GiB
// over 32 layers.
TEST(MegatronArgs, MoeCommandLineRunsTheProbabilitiesPath) {
  PlanRequest r;
  r.hf_config = file("hf/mixtral-8x7b/config.json");
  r.megatron = ConfigText{"torchrun --nproc-per-node 8 pretrain_gpt.py --seq-length 4096 --micro-batch-size 1 "
                          "--expert-model-parallel-size 8 --moe-token-dispatcher-type alltoall --moe-grouped-gemm "
                          "--bf16",
                          "args.txt"};
  const PlanConfigs p = build_plan(r, "", "");
  EXPECT_TRUE(p.strategy.dispatch_probs);
  StrategyConfig old = p.strategy;
  old.dispatch_probs = false;
  const SystemConfig sys = test::preset_system("h100-sxm-80g");
  const Estimate now = estimate(p.model, p.strategy, sys), before = estimate(p.model, old, sys);
  ASSERT_EQ(now.stages.size(), 1u);
  EXPECT_DOUBLE_EQ(before.stages[0].activation_cache_per_mb_bytes - now.stages[0].activation_cache_per_mb_bytes,
                   32.0 * 8192 * 4096 * 2);
  // A dense command line does not get the key.
  PlanRequest dense;
  dense.hf_config = file("hf/llama-3.1-8b/config.json");
  dense.megatron = ConfigText{"torchrun --nproc-per-node 8 pretrain_gpt.py --seq-length 4096 --micro-batch-size 1", "a.txt"};
  EXPECT_FALSE(build_plan(dense, "", "").strategy.dispatch_probs);
}

}  // namespace
}  // namespace trainsim
