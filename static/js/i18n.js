// Every string the page shows, in English and Chinese. Explanations are written for this
// product (a learner stepping through a real forward pass), with the usual misconceptions.

let current = "en";

export function setLang(lang) {
  current = lang === "zh" ? "zh" : "en";
  document.documentElement.lang = current === "zh" ? "zh-CN" : "en";
}

export function lang() {
  return current;
}

function fill(text, vars) {
  return text.replace(/\{(\w+)\}/g, (whole, name) => (vars && name in vars ? String(vars[name]) : whole));
}

/** A UI string. */
export function t(key, vars) {
  const entry = UI[key];
  if (!entry) return key;
  return fill(entry[current] || entry.en, vars);
}

/** A stage's {title, formula, explain} for the current language. */
export function stepText(key, vars) {
  const entry = STEPS[key] || STEPS.unknown;
  const pick = (field) => {
    const value = entry[field];
    if (!value) return "";
    const text = typeof value === "function" ? value(vars) : value;
    return fill(text[current] || text.en || "", vars);
  };
  return { title: pick("title"), formula: pick("formula"), explain: pick("explain"), short: pick("short") };
}

export const UI = {
  app_title: { en: "Transformer Explorer", zh: "Transformer 探索器" },
  tagline: {
    en: "Type a sentence and watch a real Transformer process it, one stage at a time.",
    zh: "输入一句话，一步一步看真实的 Transformer 如何处理它。",
  },
  model: { en: "Model", zh: "模型" },
  text: { en: "Sentence", zh: "句子" },
  target: { en: "Decoder input (target so far)", zh: "解码器输入（已生成的目标）" },
  run: { en: "Run", zh: "运行" },
  fill_target: { en: "Let the model write it", zh: "让模型来写" },
  training_progress: { en: "Training progress", zh: "训练进度" },
  snapshot_step: { en: "weights after {step} steps · validation loss {loss}", zh: "训练 {step} 步时的权重 · 验证损失 {loss}" },
  snapshot_final: { en: "final weights ({step} steps) · validation loss {loss}", zh: "最终权重（{step} 步）· 验证损失 {loss}" },
  examples: { en: "Examples", zh: "示例" },
  tokens: { en: "Tokens", zh: "词元（Token）" },
  target_tokens: { en: "Target tokens", zh: "目标词元" },
  prev: { en: "◀ Prev", zh: "◀ 上一步" },
  next: { en: "Next ▶", zh: "下一步 ▶" },
  layer: { en: "Layer", zh: "层" },
  head: { en: "Head", zh: "头" },
  view: { en: "View", zh: "视图" },
  view_head: { en: "One head", zh: "单个头" },
  view_heads: { en: "All heads", zh: "全部头" },
  view_layers: { en: "All layers × heads", zh: "所有层 × 头" },
  present: { en: "Present", zh: "演示模式" },
  exit_present: { en: "Exit presentation", zh: "退出演示" },
  copy_link: { en: "Copy link", zh: "复制链接" },
  link_copied: { en: "Link copied — it opens this exact view.", zh: "链接已复制，打开后就是当前这个画面。" },
  link_ready: { en: "Copy this link:", zh: "复制这个链接：" },
  lang_toggle: { en: "中文", zh: "English" },
  stages: { en: "Stages", zh: "步骤" },
  step_of: { en: "Step {n} of {total}", zh: "第 {n} 步，共 {total} 步" },
  shape: { en: "Shape", zh: "形状" },
  formula: { en: "Formula", zh: "公式" },
  export_json: { en: "JSON", zh: "JSON" },
  export_csv: { en: "CSV", zh: "CSV" },
  export_hint: { en: "Download this chart's numbers", zh: "下载这张图的数据" },
  loading: { en: "Computing…", zh: "计算中…" },
  input: { en: "Input", zh: "输入" },
  output: { en: "Output", zh: "输出" },
  block: { en: "Block {n}", zh: "第 {n} 个块" },
  blocks: { en: "Blocks (layer {n})", zh: "Transformer 块（第 {n} 层）" },
  encoder: { en: "Encoder", zh: "编码器" },
  decoder: { en: "Decoder", zh: "解码器" },
  encoder_blocks: { en: "Encoder blocks (layer {n})", zh: "编码器块（第 {n} 层）" },
  decoder_blocks: { en: "Decoder blocks (layer {n})", zh: "解码器块（第 {n} 层）" },
  keys_hint: {
    en: "Keys: ← → or PageUp/PageDown step · L/H change layer/head · P presentation",
    zh: "快捷键：← → 或 PageUp/PageDown 翻步 · L/H 切换层/头 · P 演示模式",
  },
  arch_decoder: {
    en: "Decoder-only (like GPT, Llama): causal self-attention, no encoder and no cross-attention. (GPT is one model built from Transformer blocks; BERT and T5 are others.)",
    zh: "仅解码器（如 GPT、Llama）：因果自注意力，没有编码器，也没有交叉注意力。（GPT 只是用 Transformer 结构搭出来的一种模型，BERT、T5 也是。）",
  },
  arch_encoder: {
    en: "Encoder-only (like BERT): every token sees every other token; it understands text but does not generate.",
    zh: "仅编码器（如 BERT）：每个词元都能看到全部词元；擅长理解，不负责生成。",
  },
  arch_encdec: {
    en: "Encoder-decoder (the original 2017 design): the encoder reads the source, the decoder writes the target and looks back at the source through cross-attention.",
    zh: "编码器-解码器（2017 年原始设计）：编码器读源句，解码器写目标句，并通过交叉注意力回看源句。",
  },
  english_only: {
    en: "English-only vocabulary: Chinese characters mostly become [UNK] in this model.",
    zh: "这个模型的词表只有英文：中文字符大多会变成 [UNK]。",
  },
  config_line: {
    en: "{layers} layers · d_model {d_model} · {heads} heads of {d_head} · {kv} · {norm} ({placement}) · {act} · {pos}",
    zh: "{layers} 层 · d_model {d_model} · {heads} 个头，每头 {d_head} 维 · {kv} · {norm}（{placement}）· {act} · {pos}",
  },
  kv_mha: { en: "MHA", zh: "MHA（多头）" },
  kv_gqa: { en: "GQA: {kv} K/V heads", zh: "GQA：{kv} 组 K/V 头" },
  kv_mqa: { en: "MQA: 1 K/V head", zh: "MQA：1 组 K/V 头" },
  pre_norm: { en: "Pre-Norm", zh: "前置归一化" },
  post_norm: { en: "Post-Norm", zh: "后置归一化" },
  // axes and hovers
  ax_token: { en: "token (position·text)", zh: "词元（位置·文字）" },
  ax_query: { en: "query token (looking)", zh: "查询词元（发起关注）" },
  ax_key: { en: "key token (looked at)", zh: "键词元（被关注）" },
  ax_source: { en: "source token (encoder)", zh: "源词元（编码器）" },
  ax_dim: { en: "dimension of d_model", zh: "d_model 的维度" },
  ax_dhead: { en: "dimension of d_head", zh: "d_head 的维度" },
  ax_dmlp: { en: "hidden unit of d_mlp", zh: "d_mlp 的隐藏单元" },
  ax_position: { en: "position", zh: "位置" },
  ax_pair: { en: "rotation pair i", zh: "旋转维度对 i" },
  ax_value: { en: "value", zh: "数值" },
  ax_prob: { en: "probability", zh: "概率" },
  ax_logit: { en: "logit", zh: "logit" },
  ax_id: { en: "token id", zh: "词元 id" },
  ax_pre: { en: "before activation", zh: "激活前" },
  ax_post: { en: "after activation", zh: "激活后" },
  hover_cell: { en: "value", zh: "数值" },
  hover_dot: { en: "q·k", zh: "q·k 点积" },
  hover_scaled: { en: "÷√d_k", zh: "÷√d_k 后" },
  hover_weight: { en: "weight", zh: "权重" },
  hover_masked: {
    en: "hidden by the mask → −∞ → weight 0",
    zh: "被掩码遮住 → −∞ → 权重为 0",
  },
  masked_future: {
    en: "Grey cells: the key comes after the query, so the query may not look at it.",
    zh: "灰色格子：键在查询之后（是“未来”的词元），查询不能看它。",
  },
  masked_none: {
    en: "Nothing is hidden here: every query may look at every key.",
    zh: "这里没有被遮住的格子：每个查询都可以看所有的键。",
  },
  masked_count: { en: "{n} of {total} cells hidden", zh: "{total} 个格子中有 {n} 个被遮住" },
  compare_scale: { en: "Compare: softmax without ÷√d_k", zh: "对比：不除以 √d_k 的 softmax" },
  with_scale: { en: "softmax(Q·Kᵀ/√d_k) — what the model uses", zh: "softmax(Q·Kᵀ/√d_k)：模型实际使用的" },
  without_scale: { en: "softmax(Q·Kᵀ) — without the scaling", zh: "softmax(Q·Kᵀ)：不做缩放" },
  compare_note: {
    en: "Without the division the rows get peakier (closer to one winner). The model itself always divides; the right-hand chart is only for comparison.",
    zh: "不做除法时，每行的分布更尖锐（更接近“赢家通吃”）。模型本身总是做除法，右图只是用来对比。",
  },
  compare_source_api: { en: "(computed by the server)", zh: "（由服务器计算）" },
  compare_source_page: {
    en: "(softmax of the raw scores taken in the page, for this comparison only)",
    zh: "（仅为对比，由页面对原始分数做 softmax）",
  },
  top_next: { en: "Most likely next tokens after the whole sentence", zh: "整句之后最可能的下一个词元" },
  generated: { en: "Sampled continuation (top-10, seed 0): ", zh: "采样续写（前 10 个候选，种子 0）：" },
  logits_at: { en: "Logits at the last position (same tokens)", zh: "最后一个位置的 logits（同样这些词元）" },
  no_lm_head: {
    en: "This model has no language-model head: its output is the final vector of each token (a sentence encoder).",
    zh: "这个模型没有语言模型输出头：它的输出就是每个词元最后的向量（句子编码器）。",
  },
  dim_curves: { en: "A few dimensions across positions", zh: "几个维度随位置的变化" },
  scale_chart: { en: "Per-token statistics of the norm", zh: "归一化的逐词元统计量" },
  norm_mean: { en: "mean μ", zh: "均值 μ" },
  norm_scale: { en: "scale 1/σ", zh: "缩放 1/σ" },
  norm_scale_rms: { en: "scale 1/RMS", zh: "缩放 1/RMS" },
  activation_scatter: {
    en: "Each hidden unit of token {tok}: input → output of the activation",
    zh: "词元 {tok} 的每个隐藏单元：激活函数的输入 → 输出",
  },
  pick_token: {
    en: "Click a row of the heatmap to pick another token.",
    zh: "点击热力图中的一行，可以换一个词元。",
  },
  gqa_note: {
    en: "Grouped-query attention: {heads} query heads share {kv} key/value heads, so head {h} reads K/V head {kvh}.",
    zh: "分组查询注意力（GQA）：{heads} 个查询头共用 {kv} 组键/值头，所以第 {h} 个头读取第 {kvh} 组 K/V。",
  },
  overview_hint: {
    en: "Click a small map to open that layer and head.",
    zh: "点击任意小图，打开对应的层和头。",
  },
  no_heads_here: {
    en: "This stage has no head dimension; showing the single-tensor view.",
    zh: "这一步没有“头”这个维度，显示单张图。",
  },
  // head labels from the checkpoint's head scores (repeated random tokens)
  "pat_previous-token": { en: "previous-token", zh: "前一词元" },
  "pat_first-token": { en: "first-token (sink)", zh: "首词元（汇聚）" },
  pat_self: { en: "self", zh: "自身" },
  "pat_duplicate-token": { en: "duplicate-token", zh: "重复词元" },
  pat_induction: { en: "induction", zh: "归纳" },
  head_label_note: {
    en: "On repeated random tokens this head behaves as a {pattern} head (score {score}). Measured when the model was saved.",
    zh: "在重复的随机词元上，这个头表现为“{pattern}”头（得分 {score}）。这是保存模型时测得的。",
  },
  // errors
  err_empty: { en: "Type a sentence first.", zh: "请先输入一句话。" },
  err_too_long: {
    en: "That text is too long for the explorer. Try a shorter sentence. ({detail})",
    zh: "这段文字太长了，请换一句短一点的。（{detail}）",
  },
  err_busy: {
    en: "The server is busy right now. Wait a moment and try again — the last view stays on screen.",
    zh: "服务器正忙，请稍等片刻再试。上一次的画面会保留。",
  },
  err_down: {
    en: "Cannot reach the server. Is it running? The last view stays on screen.",
    zh: "连接不上服务器，它在运行吗？上一次的画面会保留。",
  },
  err_generic: { en: "Something went wrong: {detail}", zh: "出错了：{detail}" },
  err_no_models: { en: "The server has no models loaded.", zh: "服务器没有加载任何模型。" },
  dismiss: { en: "Dismiss", zh: "关闭" },
  pos_none: {
    en: "This model has no positional encoding: order can only leak in through the causal mask.",
    zh: "这个模型没有位置编码：顺序信息只能通过因果掩码间接进入。",
  },
};

// ------------------------------------------------------------------ explanations per stage

const NORM_FORMULA = (v) =>
  v.norm === "rmsnorm"
    ? { en: "RMSNorm(x) = γ ⊙ x / √(mean(x²) + ε)", zh: "RMSNorm(x) = γ ⊙ x / √(mean(x²) + ε)" }
    : { en: "LayerNorm(x) = γ ⊙ (x − μ) / √(σ² + ε) + β", zh: "LayerNorm(x) = γ ⊙ (x − μ) / √(σ² + ε) + β" };

const NORM_PLACEMENT = (v) =>
  v.placement === "post"
    ? {
        en: " This model is Post-Norm (original Transformer, BERT): the norm comes after the residual addition (“Add & Norm”), so the residual stream itself gets normalised.",
        zh: " 这个模型是后置归一化（原始 Transformer、BERT 的做法）：先做残差相加，再归一化（Add & Norm），所以残差流本身被归一化了。",
      }
    : {
        en: " This model is Pre-Norm (GPT-2, Llama): the vector is normalised on its way into the sub-layer, and the residual stream itself is left untouched. Deep Pre-Norm stacks train more stably, which is why most modern LLMs use it.",
        zh: " 这个模型是前置归一化（GPT-2、Llama 的做法）：向量在进入子层之前先归一化，残差流本身保持不变。前置归一化的深层网络训练更稳定，所以现代大模型大多采用它。",
      };

const join = (...parts) => ({ en: parts.map((p) => p.en).join(""), zh: parts.map((p) => p.zh).join("") });

const ATT_FORMULA = { en: "Attention(Q, K, V) = softmax(Q·Kᵀ / √d_k) · V", zh: "Attention(Q, K, V) = softmax(Q·Kᵀ / √d_k) · V" };

export const STEPS = {
  unknown: { title: { en: "Stage", zh: "步骤" }, formula: { en: "", zh: "" }, explain: { en: "", zh: "" } },
  tokens: {
    title: { en: "Tokenize", zh: "分词" },
    short: { en: "tokenize", zh: "分词" },
    formula: { en: "text → tokens → [id₀, id₁, id₂, …]", zh: "文字 → 词元 → [id₀, id₁, id₂, …]" },
    explain: {
      en: "A model never reads letters. The tokenizer ({tokenizer}) cuts the sentence into pieces it has in its vocabulary of {vocab} entries and swaps each piece for its number. From here on, everything works with these {n} numbers. A piece can be a word, part of a word, one character or even a single byte of a character.",
      zh: "模型并不直接读文字。分词器（{tokenizer}）把句子切成词表（共 {vocab} 项）里已有的片段，再把每个片段换成它的编号。从这里开始，后面的每一步处理的都是这 {n} 个数字。一个片段可能是一个词、半个词、一个字，甚至是一个字的某个字节。",
    },
  },
  embed: {
    title: { en: "Token embedding", zh: "词嵌入（Embedding）" },
    short: { en: "embedding", zh: "词嵌入" },
    formula: { en: "x_i = W_E[id_i]     W_E: d_vocab × d_model", zh: "x_i = W_E[id_i]     W_E：d_vocab × d_model" },
    explain: {
      en: "Each id looks up one row of a learned table W_E, giving every token a vector of {d_model} numbers (one row of the heatmap per token). The same token always gets the same row, wherever it stands. At this point each token only knows what it is — nothing about its neighbours.",
      zh: "每个编号到一张学出来的表 W_E 里取出一行，于是每个词元得到一个 {d_model} 维的向量（热力图里每个词元占一行）。同一个词元无论出现在哪里，取到的都是同一行。此时每个词元只知道“我是谁”，对上下文一无所知。",
    },
  },
  embed_norm: {
    title: { en: "Embedding LayerNorm", zh: "嵌入层归一化" },
    short: { en: "embed norm", zh: "嵌入归一化" },
    formula: NORM_FORMULA,
    explain: {
      en: "BERT adds the token, position and segment embeddings, then normalises the sum once before the first block.",
      zh: "BERT 把词嵌入、位置嵌入和句段嵌入相加，在进入第一个块之前先做一次归一化。",
    },
  },
  pos: {
    title: { en: "Positional encoding", zh: "位置编码" },
    short: { en: "position", zh: "位置编码" },
    formula: (v) =>
      ({
        sinusoidal: {
          en: "PE(pos, 2i) = sin(pos / 10000^(2i/d_model)),  PE(pos, 2i+1) = cos(…);   x_i ← x_i + PE_i",
          zh: "PE(pos, 2i) = sin(pos / 10000^(2i/d_model))，PE(pos, 2i+1) = cos(…)；  x_i ← x_i + PE_i",
        },
        learned: { en: "x_i ← x_i + W_pos[i]     W_pos: n_ctx × d_model (learned)", zh: "x_i ← x_i + W_pos[i]     W_pos：n_ctx × d_model（学出来的）" },
        rope: {
          en: "θ(pos, i) = pos · base^(−2i/d_head);  (q₂ᵢ, q₂ᵢ₊₁) rotated by θ — same for k",
          zh: "θ(pos, i) = pos · base^(−2i/d_head)；(q₂ᵢ, q₂ᵢ₊₁) 旋转 θ 角，k 同理",
        },
        alibi: { en: "score(i, j) ← score(i, j) − m_h · |i − j|", zh: "score(i, j) ← score(i, j) − m_h · |i − j|" },
        none: { en: "(none)", zh: "（无）" },
      })[v.pos] || { en: "", zh: "" },
    explain: (v) =>
      join(
        {
          en: "Attention on its own is blind to order: shuffle the tokens and each still gets the same scores, just in another row. Position has to be put in on purpose. ",
          zh: "注意力本身不看顺序：把词元打乱，每个词元得到的分数还是一样，只是换了一行。所以位置信息必须专门加进去。",
        },
        ({
          sinusoidal: {
            en: "The original Transformer adds fixed sine and cosine waves: low dimensions swing fast, high ones slowly, so every position gets its own fingerprint and neighbouring positions look alike. Nothing here is learned.",
            zh: "原始 Transformer 加上固定的正弦、余弦波：低维度变化快，高维度变化慢，于是每个位置都有独一无二的“指纹”，相邻位置的指纹也相似。这里没有任何需要学习的参数。",
          },
          learned: {
            en: "This model learned one vector per position, just like the token table (BERT, GPT-2). Simple and effective — but a position past the longest training length ({n_ctx}) has no row at all.",
            zh: "这个模型为每个位置学了一个向量，就像词表一样（BERT、GPT-2 的做法）。简单有效，但超过训练时最大长度（{n_ctx}）的位置根本没有对应的行。",
          },
          rope: {
            en: "This model uses RoPE (Llama, Qwen): nothing is added to the embedding. Inside every attention layer, each pair of Q and K dimensions is rotated by an angle that grows with the position. When a rotated q meets a rotated k, only the difference of their angles survives in the dot product, so attention sees relative distance. The heatmap shows the angle θ for every position and dimension pair.",
            zh: "这个模型用的是旋转位置编码 RoPE（Llama、Qwen 的做法）：嵌入上什么都不加。而是在每个注意力层里，把 Q 和 K 的每一对维度旋转一个随位置增大的角度。旋转后的 q 与 k 做点积时，只剩下两者角度之差，所以注意力感受到的是相对距离。热力图显示每个位置、每对维度的旋转角 θ。",
          },
          alibi: {
            en: "This model uses ALiBi (BLOOM): nothing is added to the embedding. Each attention score gets a penalty proportional to the distance between the two tokens, with a different slope per head, so far-away tokens start with lower scores. The heatmap is that bias for the chosen head.",
            zh: "这个模型用的是 ALiBi（BLOOM 的做法）：嵌入上什么都不加。每个注意力分数都会减去一个与两个词元距离成正比的惩罚，不同的头斜率不同，所以距离越远起始分数越低。热力图就是当前头的这张偏置表。",
          },
          none: {
            en: "This model has no positional encoding at all.",
            zh: "这个模型完全没有位置编码。",
          },
        })[v.pos] || { en: "", zh: "" },
      ),
  },
  ln1: {
    title: (v) =>
      v.placement === "post"
        ? { en: "Norm after attention (Add & Norm)", zh: "注意力之后的归一化（Add & Norm）" }
        : { en: "Norm before attention", zh: "注意力前的归一化" },
    short: { en: "norm", zh: "归一化" },
    formula: NORM_FORMULA,
    explain: (v) =>
      join(
        {
          en: "Each token's vector is rescaled on its own, across its {d_model} features (never across tokens or the batch, unlike BatchNorm), so the next layer always gets inputs of a similar size.",
          zh: "每个词元的向量各自在自己的 {d_model} 个特征上重新缩放（不跨词元，也不跨 batch，这一点和 BatchNorm 不同），让下一层拿到的输入大小始终相近。",
        },
        NORM_PLACEMENT(v),
      ),
  },
  ln2: {
    title: (v) =>
      v.placement === "post"
        ? { en: "Norm after the FFN (Add & Norm)", zh: "前馈网络之后的归一化（Add & Norm）" }
        : { en: "Norm before the FFN", zh: "前馈网络前的归一化" },
    short: { en: "norm", zh: "归一化" },
    formula: NORM_FORMULA,
    explain: (v) =>
      join(
        v.arch === "decoder" && v.placement !== "post"
          ? {
              en: "A decoder-only model goes straight from self-attention to the feed-forward network: there is no cross-attention, because there is no encoder to read from. ",
              zh: "仅解码器模型在自注意力之后直接进入前馈网络：这里没有交叉注意力，因为根本没有编码器可读。",
            }
          : { en: "", zh: "" },
        { en: "Same normalisation, new learned γ.", zh: "同样的归一化，只是用了另一组学出来的 γ。" },
        NORM_PLACEMENT(v),
      ),
  },
  ln_cross: {
    title: (v) =>
      v.placement === "post"
        ? { en: "Norm after cross-attention", zh: "交叉注意力之后的归一化" }
        : { en: "Norm before cross-attention", zh: "交叉注意力前的归一化" },
    short: { en: "norm", zh: "归一化" },
    formula: NORM_FORMULA,
    explain: (v) => join({ en: "Normalises the decoder stream.", zh: "对解码器的残差流做归一化。" }, NORM_PLACEMENT(v)),
  },
  ln_final: {
    title: { en: "Final norm", zh: "最终归一化" },
    short: { en: "final norm", zh: "最终归一化" },
    formula: NORM_FORMULA,
    explain: {
      en: "One last normalisation of the residual stream, after the last block and before the output layer reads it.",
      zh: "在最后一个块之后、输出层读取之前，对残差流再做最后一次归一化。",
    },
  },
  qkv: {
    title: { en: "Q, K, V projections", zh: "Q、K、V 投影" },
    short: { en: "Q, K, V", zh: "Q、K、V" },
    formula: { en: "Q = x·W_Q,   K = x·W_K,   V = x·W_V      split into {heads} heads × {d_head}", zh: "Q = x·W_Q，K = x·W_K，V = x·W_V      拆成 {heads} 个头 × {d_head} 维" },
    explain: {
      en: "Three learned matrices give every token three roles. Its query says what it is looking for, its key says what it can be found by, and its value is what it hands over when chosen — a library visitor's request, the labels on the shelves, and the books themselves. Nobody wrote these rules: W_Q, W_K and W_V were learned in training. The {d_model} numbers are split into {heads} heads of {d_head}, and each head attends on its own.",
      zh: "三个学出来的矩阵给每个词元分配三种角色：查询（Query）表示“我在找什么”，键（Key）表示“我能被什么找到”，值（Value）是“被选中后我交出去的内容”——就像图书馆里读者的需求、书架上的标签和书的内容。这些规则不是人写的：W_Q、W_K、W_V 都是训练中学出来的。{d_model} 个数被拆成 {heads} 个头，每个头 {d_head} 维，各自独立地做注意力。",
    },
  },
  rope: {
    title: { en: "Rotate Q and K (RoPE)", zh: "旋转 Q 和 K（RoPE）" },
    short: { en: "RoPE", zh: "RoPE 旋转" },
    formula: { en: "(q₂ᵢ, q₂ᵢ₊₁) ← R(pos·θᵢ)·(q₂ᵢ, q₂ᵢ₊₁),   same for k;  v is not rotated", zh: "(q₂ᵢ, q₂ᵢ₊₁) ← R(pos·θᵢ)·(q₂ᵢ, q₂ᵢ₊₁)，k 同理；v 不旋转" },
    explain: {
      en: "Here position enters the model: each pair of dimensions of q and k is turned by an angle proportional to the token's position. Compare with the previous step: the first token (position 0) is not rotated at all; later tokens change more in the fast-turning low dimensions. V is left alone — position only affects who looks at whom, not what gets passed along.",
      zh: "位置信息就是在这里进入模型的：q 和 k 的每一对维度按词元的位置旋转一个角度。和上一步对比：第一个词元（位置 0）完全不转；越靠后的词元，在旋转较快的低维度上变化越大。V 不旋转——位置只影响“谁看谁”，不影响传递的内容。",
    },
  },
  scores: {
    title: { en: "Scores Q·Kᵀ", zh: "注意力分数 Q·Kᵀ" },
    short: { en: "Q·Kᵀ", zh: "Q·Kᵀ" },
    formula: { en: "S = Q·Kᵀ,    S[i, j] = q_i · k_j", zh: "S = Q·Kᵀ，  S[i, j] = q_i · k_j" },
    explain: {
      en: "Every query is compared with every key by a dot product: large when the two vectors point the same way, negative when they point apart. Row i says how well token i's query matches each token's key. The table is n × n, so the work grows with the square of the length — O(n²·d).",
      zh: "每个查询都和每个键做点积：两个向量方向越一致，点积越大；方向相反则为负。第 i 行表示第 i 个词元的查询和各个词元的键有多匹配。这是一张 n × n 的表，所以计算量随长度的平方增长——O(n²·d)。",
    },
  },
  scale: {
    title: { en: "Scale by √d_k", zh: "除以 √d_k 缩放" },
    short: { en: "÷√d_k", zh: "÷√d_k" },
    formula: { en: "S′ = S / √d_k = S / √{d_head} = S / {sqrt}", zh: "S′ = S / √d_k = S / √{d_head} = S / {sqrt}" },
    explain: (v) =>
      join(
        {
          en: "A dot product adds up d_k products, so its spread grows like √d_k (variance ≈ d_k for unit-variance vectors). Scores in the tens push softmax into a winner-takes-all corner where almost no gradient flows. Dividing by √d_k brings them back near 1 — it is a temperature that keeps softmax from saturating.",
          zh: "点积是 d_k 个乘积之和，它的波动随 √d_k 增大（单位方差向量的点积方差约为 d_k）。分数达到几十时，softmax 会变成“赢家通吃”，几乎没有梯度能传回去。除以 √d_k 把分数拉回 1 附近——它就像一个温度，防止 softmax 饱和。",
        },
        v.pos === "alibi"
          ? { en: " ALiBi's distance penalty is added at this point too.", zh: " ALiBi 的距离惩罚也在这一步加上。" }
          : { en: "", zh: "" },
      ),
  },
  mask: {
    title: { en: "Mask", zh: "掩码" },
    short: { en: "mask", zh: "掩码" },
    formula: (v) =>
      v.causal
        ? { en: "S′[i, j] = −∞  where  j > i   (causal mask)", zh: "当 j > i 时 S′[i, j] = −∞（因果掩码）" }
        : { en: "no mask: every token sees every token", zh: "不加掩码：每个词元都能看到所有词元" },
    explain: (v) =>
      v.causal
        ? {
            en: "A decoder learns to predict the next token, so position i must not peek at the tokens after it. Those cells become −∞ (grey) and turn into exactly 0 after softmax. Thanks to the mask, training can predict every position of a sentence in one pass.",
            zh: "解码器要学会预测下一个词元，所以位置 i 不能偷看它后面的词元。这些格子被设为 −∞（灰色），softmax 之后恰好变成 0。正因为有了掩码，训练时可以一次性预测句子里每个位置。",
          }
        : {
            en: "An encoder reads the whole sentence at once, so nothing is hidden: attention runs in both directions. (Only padding would be masked.)",
            zh: "编码器一次读完整句话，所以什么都不遮：注意力是双向的。（只有填充位置才会被遮住。）",
          },
  },
  softmax: {
    title: { en: "Softmax → attention weights", zh: "Softmax → 注意力权重" },
    short: { en: "softmax", zh: "softmax" },
    formula: { en: "A = softmax(S′) row by row;   Σ_j A[i, j] = 1", zh: "A = 逐行 softmax(S′)；  Σ_j A[i, j] = 1" },
    explain: {
      en: "Softmax turns each row of scores into weights between 0 and 1 that sum to 1: how token i shares out its attention in this head. A big weight means information flows from that key token into this one here — it does not mean the model finds that token important overall; other heads and layers look elsewhere. These weights are one output of the attention mechanism, not the mechanism itself.",
      zh: "Softmax 把每一行分数变成 0 到 1 之间、总和为 1 的权重：第 i 个词元在这个头里如何分配注意力。权重大只说明在这一层、这个头里信息从那个键词元流向这里，并不代表模型认为它整体上“重要”；别的头、别的层看的地方可能完全不同。这些权重只是注意力机制的一个输出，而不是机制本身。",
    },
  },
  z: {
    title: { en: "Weighted sum of V", zh: "对 V 加权求和" },
    short: { en: "A·V", zh: "A·V" },
    formula: { en: "z_i = Σ_j A[i, j] · v_j", zh: "z_i = Σ_j A[i, j] · v_j" },
    explain: {
      en: "Each token's output in this head is an average of the value vectors, weighted by the attention weights just computed. This is the moment information actually moves from one token to another.",
      zh: "每个词元在这个头里的输出，是所有值向量按刚才算出的注意力权重做的加权平均。信息正是在这一刻从一个词元流到另一个词元。",
    },
  },
  attn_out: {
    title: { en: "Concat heads + W_O", zh: "拼接各头 + W_O" },
    short: { en: "concat·W_O", zh: "拼接·W_O" },
    formula: { en: "MultiHead(x) = Concat(head₁, …, head_{heads}) · W_O", zh: "MultiHead(x) = Concat(head₁, …, head_{heads}) · W_O" },
    explain: {
      en: "The {heads} heads' outputs are laid side by side ({heads} × {d_head} = {d_model} numbers again) and mixed by one more learned matrix W_O. More heads do not mean more parameters: {heads} slices of {d_head} make the same d_model × d_model matrices as one big head — it is a different way of cutting, not more computation.",
      zh: "{heads} 个头的输出并排拼接起来（{heads} × {d_head} = {d_model} 个数），再经过一个学出来的矩阵 W_O 混合。头多并不意味着参数多：{heads} 个 {d_head} 维的切片拼起来，和一个大头用的 d_model × d_model 矩阵一样大——只是换一种切法，而不是多算。",
    },
  },
  resid_mid: {
    title: { en: "Add residual (after attention)", zh: "残差相加（注意力之后）" },
    short: { en: "+ residual", zh: "+ 残差" },
    formula: { en: "x ← x + Attention(x)", zh: "x ← x + Attention(x)" },
    explain: (v) =>
      join(
        {
          en: "The attention output is added to the vector that came in. The embedding is not replaced — it is still in there, with new information written on top. The residual stream is a running sum; each sub-layer only adds a correction (possibly close to zero), and gradients flow straight back through the addition.",
          zh: "注意力的输出被加到进来的向量上。原来的嵌入没有被替换——它还在里面，只是上面叠加了新的信息。残差流是一个不断累加的和；每个子层只负责加上一个修正量（可以接近 0），梯度也能沿着这条加法直接回传。",
        },
        v.placement === "post"
          ? { en: " Post-Norm: the sum is normalised next.", zh: " 后置归一化：接下来对这个和做归一化。" }
          : { en: "", zh: "" },
      ),
  },
  cross_qkv: {
    title: { en: "Cross-attention Q, K, V", zh: "交叉注意力的 Q、K、V" },
    short: { en: "cross Q, K, V", zh: "交叉 Q、K、V" },
    formula: { en: "Q = x_dec·W_Q,   K = h_enc·W_K,   V = h_enc·W_V", zh: "Q = x_dec·W_Q，K = h_enc·W_K，V = h_enc·W_V" },
    explain: {
      en: "Cross-attention is what the encoder-decoder has and a decoder-only GPT does not. The queries come from the decoder (the words written so far); the keys and values come from the encoder's final output (the source sentence). It is how a translator looks back at the original while writing.",
      zh: "交叉注意力是编码器-解码器独有的，仅解码器的 GPT 没有这一步。查询来自解码器（已经写出的词），键和值来自编码器的最终输出（源句）。这就像翻译时一边写译文一边回看原文。",
    },
  },
  cross_scores: {
    title: { en: "Cross scores Q·Kᵀ", zh: "交叉注意力分数 Q·Kᵀ" },
    short: { en: "cross Q·Kᵀ", zh: "交叉 Q·Kᵀ" },
    formula: { en: "S[i, j] = q_i(target) · k_j(source)", zh: "S[i, j] = q_i（目标）· k_j（源）" },
    explain: {
      en: "Rows are target tokens, columns are source tokens: the table is target length × source length, not square.",
      zh: "行是目标词元，列是源词元：这张表的大小是“目标长度 × 源长度”，不一定是方阵。",
    },
  },
  cross_scale: {
    title: { en: "Cross: scale by √d_k", zh: "交叉注意力：除以 √d_k" },
    short: { en: "cross ÷√d_k", zh: "交叉 ÷√d_k" },
    formula: { en: "S′ = S / √{d_head}", zh: "S′ = S / √{d_head}" },
    explain: {
      en: "The same scaling as in self-attention, for the same reason: keep softmax away from saturation.",
      zh: "和自注意力一样的缩放，理由也一样：别让 softmax 饱和。",
    },
  },
  cross_mask: {
    title: { en: "Cross: no causal mask", zh: "交叉注意力：没有因果掩码" },
    short: { en: "cross mask", zh: "交叉掩码" },
    formula: { en: "no causal mask: the whole source is visible", zh: "没有因果掩码：整个源句都可见" },
    explain: {
      en: "The source sentence is fully known before the decoder starts, so every target token may read every source token. Nothing is hidden (only padding would be).",
      zh: "源句在解码开始前就完整已知，所以每个目标词元都可以读所有源词元。这里什么都不遮（只有填充位置才会被遮）。",
    },
  },
  cross_softmax: {
    title: { en: "Cross: softmax", zh: "交叉注意力：softmax" },
    short: { en: "cross softmax", zh: "交叉 softmax" },
    formula: { en: "A = softmax(S′) row by row", zh: "A = 逐行 softmax(S′)" },
    explain: {
      en: "For each target token: which source tokens it is reading from right now. In a trained translator these rows often line up with the words being translated.",
      zh: "对每个目标词元：它此刻正在读哪些源词元。训练好的翻译模型里，这些行常常对准正在翻译的那个词。",
    },
  },
  cross_z: {
    title: { en: "Cross: weighted sum of source V", zh: "交叉注意力：对源 V 加权求和" },
    short: { en: "cross A·V", zh: "交叉 A·V" },
    formula: { en: "z_i = Σ_j A[i, j] · v_j(source)", zh: "z_i = Σ_j A[i, j] · v_j（源）" },
    explain: {
      en: "Information moves from the source sentence into each target position.",
      zh: "信息从源句流入每个目标位置。",
    },
  },
  cross_out: {
    title: { en: "Cross: concat + W_O", zh: "交叉注意力：拼接 + W_O" },
    short: { en: "cross W_O", zh: "交叉 W_O" },
    formula: { en: "Concat(heads) · W_O", zh: "Concat(heads) · W_O" },
    explain: { en: "Heads are joined and mixed back to d_model.", zh: "各个头拼接后混合回 d_model 维。" },
  },
  resid_cross: {
    title: { en: "Add residual (after cross-attention)", zh: "残差相加（交叉注意力之后）" },
    short: { en: "+ residual", zh: "+ 残差" },
    formula: { en: "x ← x + CrossAttention(x, h_enc)", zh: "x ← x + CrossAttention(x, h_enc)" },
    explain: {
      en: "What was read from the source is added onto the decoder's stream.",
      zh: "从源句读到的信息被加到解码器的残差流上。",
    },
  },
  ffn_in: {
    title: { en: "FFN: widen", zh: "前馈网络：升维" },
    short: { en: "FFN in", zh: "FFN 升维" },
    formula: (v) =>
      v.act === "swiglu"
        ? { en: "gate = x·W_gate,   up = x·W_up      (d_model {d_model} → d_mlp {d_mlp})", zh: "gate = x·W_gate，up = x·W_up      （d_model {d_model} → d_mlp {d_mlp}）" }
        : { en: "h = x·W₁ + b₁      (d_model {d_model} → d_mlp {d_mlp})", zh: "h = x·W₁ + b₁      （d_model {d_model} → d_mlp {d_mlp}）" },
    explain: {
      en: "The feed-forward network works on each token separately — no information moves between tokens here (that was attention's job). First it widens every vector to {d_mlp} numbers. Attention is the conversation between tokens; the FFN is each token thinking on its own.",
      zh: "前馈网络对每个词元单独处理——这里词元之间不交换信息（那是注意力的工作）。它先把每个向量扩展到 {d_mlp} 维。注意力是词元之间的“交流”，前馈网络是每个词元自己的“思考”。",
    },
  },
  ffn_act: {
    title: { en: "FFN: activation", zh: "前馈网络：激活函数" },
    short: { en: "activation", zh: "激活" },
    formula: (v) =>
      ({
        relu: { en: "ReLU(h) = max(0, h)", zh: "ReLU(h) = max(0, h)" },
        gelu: { en: "GELU(h) = h · Φ(h)", zh: "GELU(h) = h · Φ(h)" },
        gelu_tanh: { en: "GELU(h) ≈ ½h(1 + tanh(√(2/π)(h + 0.044715h³)))", zh: "GELU(h) ≈ ½h(1 + tanh(√(2/π)(h + 0.044715h³)))" },
        swiglu: { en: "SwiGLU = SiLU(gate) ⊙ up,   SiLU(g) = g · σ(g)", zh: "SwiGLU = SiLU(gate) ⊙ up，SiLU(g) = g · σ(g)" },
      })[v.act] || { en: "act(h)", zh: "act(h)" },
    explain: {
      en: "The non-linearity. Without it, stacked linear layers would collapse into a single linear map, however many there are. The scatter plot takes one token's hidden units: the input on the x-axis, the output on the y-axis — the activation curve, drawn by the model's real numbers.",
      zh: "非线性就在这里。没有它，无论叠多少层线性变换，最后都等价于一个线性变换。散点图取一个词元的全部隐藏单元：横轴是输入，纵轴是输出——用模型真实的数字画出了激活函数的曲线。",
    },
  },
  ffn_out: {
    title: { en: "FFN: back to d_model", zh: "前馈网络：降维回 d_model" },
    short: { en: "FFN out", zh: "FFN 降维" },
    formula: { en: "FFN(x) = act(h)·W₂ + b₂      (d_mlp {d_mlp} → d_model {d_model})", zh: "FFN(x) = act(h)·W₂ + b₂      （d_mlp {d_mlp} → d_model {d_model}）" },
    explain: {
      en: "A second matrix brings each token back to {d_model} numbers. The two FFN matrices hold about two-thirds of a block's parameters; much of what a model 'knows' is thought to live here.",
      zh: "第二个矩阵把每个词元压回 {d_model} 维。前馈网络的两个矩阵约占一个块参数量的三分之二；一般认为模型“知道”的很多知识就存放在这里。",
    },
  },
  resid_post: {
    title: { en: "Add residual (after FFN)", zh: "残差相加（前馈网络之后）" },
    short: { en: "+ residual", zh: "+ 残差" },
    formula: { en: "x ← x + FFN(x)", zh: "x ← x + FFN(x)" },
    explain: (v) =>
      join(
        {
          en: "The second residual addition ends the block. One block = attention (tokens talk) + FFN (each token thinks), each added onto the stream. ",
          zh: "第二次残差相加，这个块就结束了。一个块 = 注意力（词元交流）+ 前馈网络（各自思考），二者的结果都加到残差流上。",
        },
        v.last
          ? { en: "This was the last block.", zh: "这是最后一个块。" }
          : { en: "This vector is the input of the next block.", zh: "这个向量就是下一个块的输入。" },
        v.placement === "post"
          ? { en: " (Post-Norm: the sum is normalised just before this.)", zh: "（后置归一化：这个和在此之前刚做过归一化。）" }
          : { en: "", zh: "" },
      ),
  },
  logits: {
    title: { en: "Logits → next-token probabilities", zh: "Logits → 下一个词元的概率" },
    short: { en: "logits", zh: "logits" },
    formula: { en: "logits = x·W_Uᵀ   (d_model → d_vocab {vocab});   p = softmax(logits / T)", zh: "logits = x·W_Uᵀ（d_model → d_vocab {vocab}）；  p = softmax(logits / T)" },
    explain: (v) =>
      join(
        {
          en: "The last vector at each position is compared with every entry of the vocabulary, giving one score (logit) per token; softmax turns the scores at the last position into probabilities for the next token. To write text, a model picks one token, appends it and runs the whole stack again.",
          zh: "每个位置最后的向量和词表里的每一项比较，得到每个词元一个分数（logit）；softmax 把最后一个位置的分数变成下一个词元的概率。生成文本时，模型选出一个词元，把它接到末尾，然后整个网络再跑一遍。",
        },
        v.tied
          ? { en: " This model reuses its embedding table W_E as W_U (tied embeddings).", zh: " 这个模型复用嵌入表 W_E 作为 W_U（权重共享）。" }
          : { en: "", zh: "" },
      ),
  },
};
