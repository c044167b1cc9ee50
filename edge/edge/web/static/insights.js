/* Draws each <canvas data-chart="{labels, series}"> of the insights pages with Chart.js
   (static/chart.umd.min.js, vendored): one line per metric. Without JavaScript the tables
   below the charts say the same. */
(function () {
  "use strict";
  var colours = ["#2a6", "#357", "#c63", "#86c", "#d4a017", "#39c", "#c36", "#6a6"];
  function draw(canvas) {
    var data;
    try {
      data = JSON.parse(canvas.getAttribute("data-chart"));
    } catch (error) {
      return;
    }
    var names = Object.keys(data.series);
    var datasets = names.map(function (name, index) {
      return {
        label: name.replace(/_/g, " "),
        data: data.series[name],
        borderColor: colours[index % colours.length],
        backgroundColor: colours[index % colours.length],
        yAxisID: name === "followers" ? "followers" : "y",
        spanGaps: true,
        tension: 0.2,
      };
    });
    var scales = { y: { beginAtZero: true, position: "left" } };
    if (names.indexOf("followers") >= 0) {
      scales.followers = { position: "right", grid: { drawOnChartArea: false } };
    }
    new window.Chart(canvas, {
      type: "line",
      data: { labels: data.labels, datasets: datasets },
      options: { responsive: true, maintainAspectRatio: false, animation: false, scales: scales },
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    if (!window.Chart) return;
    document.querySelectorAll("canvas[data-chart]").forEach(draw);
  });
})();
